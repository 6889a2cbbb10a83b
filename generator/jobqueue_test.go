package generator

import (
	"fmt"
	"testing"
)

// TestJobQueue: every job is handed out once, whatever the workers do,
// and with the jobs ordered by prototype the workers share few prototypes
// (the VM of each parses only the prototypes of its jobs).
func TestJobQueue(t *testing.T) {
	protos := []string{"tensorboard", "openmpi", "eval", "horovod"}
	for _, c := range []struct{ jobs, workers int }{{0, 1}, {1, 1}, {1, 2}, {7, 2}, {100, 2}, {100, 3}, {5, 8}} {
		t.Run(fmt.Sprintf("%d jobs, %d workers", c.jobs, c.workers), func(t *testing.T) {
			jobs := make([]Job, c.jobs)
			for i := range jobs {
				jobs[i] = Job{Name: fmt.Sprint(i), Params: NewParams(protos[i%len(protos)])}
			}
			q := newJobQueue(jobs, max(c.workers, 1))
			taken := make([]int, c.jobs)
			seen := make([]map[string]bool, c.workers)
			for k := range seen {
				seen[k] = map[string]bool{}
			}
			// Worker 0 is slow: it takes one job while each other takes two.
			for done := false; !done; {
				done = true
				for k := range c.workers {
					for range 1 + min(k, 1) {
						if i, ok := q.take(k); ok {
							taken[i]++
							seen[k][jobs[i].Params.Prototype()] = true
							done = false
						}
					}
				}
			}
			for i, n := range taken {
				if n != 1 {
					t.Errorf("job %d taken %d times", i, n)
				}
			}
			if c.workers == 2 && c.jobs == 100 {
				shared := 0
				for p := range seen[0] {
					if seen[1][p] {
						shared++
					}
				}
				if shared > 1 || len(seen[0])+len(seen[1]) > len(protos)+1 {
					t.Errorf("two workers share %d prototypes: %v and %v", shared, seen[0], seen[1])
				}
			}
		})
	}
}
