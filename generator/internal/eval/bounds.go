package eval

import (
	"fmt"
	"runtime/metrics"
	"time"
)

// Bounds of one evaluation of a prototype. A prototype of one's own can
// recurse without end, which go-jsonnet does not stop when the calls are
// tailstrict (its tail calls reuse its frames, not Go's: the Go runtime
// dies at a 1 GB stack with "fatal error: stack overflow", which no
// recover catches), or build values without end. Evaluations are watched
// instead: each runs on a goroutine of its own, and one that passes a
// bound is an error of the prototype's, returned at once. go-jsonnet
// cannot be stopped, so the evaluation is left behind (its VM is never
// reused): the CLI exits on the error; a long-lived Go program that
// renders prototypes it does not trust does so in a process of its own.
//
// The built-in prototypes evaluate in milliseconds, with stacks of a few
// kilobytes and a few megabytes of heap at 5,000 workers: the bounds are
// far from anything a prototype needs.
//
// Time is each evaluation's own. Stack and Heap are not: Go reports
// memory for the process (runtime/metrics), not per goroutine, so they
// bound how much the process's stacks and heap grow while an evaluation
// runs. Evaluations run side by side (RenderEach, one per core) count
// against each other: n of them at once each see what all n grew. At the
// built-ins' megabytes against bounds of 128 MB and 4 GB that changes
// nothing; a batch of large prototypes of one's own may pass the heap
// bound together where each alone would not.
type Bounds struct {
	// Time bounds an evaluation's time.
	Time time.Duration
	// Stack bounds how much the stacks of the process grow while an
	// evaluation runs, well below the Go runtime's 1 GB for one
	// goroutine: a stack doubles as it grows, and is caught with 768 MB
	// to go.
	Stack uint64
	// Heap bounds how much the heap of the process grows while an
	// evaluation runs.
	Heap uint64
	// Every is how often an evaluation is looked at.
	Every time.Duration
}

// DefaultBounds are an Engine's.
var DefaultBounds = Bounds{Time: 2 * time.Minute, Stack: 128 << 20, Heap: 4 << 30, Every: 10 * time.Millisecond}

// A boundError is an evaluation that passed a bound.
type boundError struct{ what string }

func (e *boundError) Error() string {
	return "evaluation stopped: " + e.what
}

// watched runs eval on a goroutine of its own and returns what it
// returns, or a *boundError once it passes a bound (abandoned: eval
// runs on, unwatched).
func watched[T any](b Bounds, eval func() (T, error)) (_ T, abandoned bool, err error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	heap0, stacks0 := memory()
	go func() {
		v, err := eval()
		done <- result{v, err}
	}()
	tick := time.NewTicker(b.Every)
	defer tick.Stop()
	var zero T
	for {
		select {
		case r := <-done:
			return r.v, false, r.err
		case now := <-tick.C:
			heap, stacks := memory()
			switch {
			case stacks > stacks0 && stacks-stacks0 > b.Stack:
				return zero, true, &boundError{fmt.Sprintf("its stack passed %s (a recursion without end? go-jsonnet bounds calls to 500 deep, but not tailstrict ones)", mb(b.Stack))}
			case heap > heap0 && heap-heap0 > b.Heap:
				return zero, true, &boundError{fmt.Sprintf("it used more than %s of memory (a value built without end?)", mb(b.Heap))}
			case now.Sub(start) > b.Time:
				return zero, true, &boundError{fmt.Sprintf("it ran for more than %s (a loop without end?)", b.Time)}
			}
		}
	}
}

// memory is the bytes of the heap's objects and of the goroutines' stacks.
func memory() (heap, stacks uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		heap = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		stacks = s[1].Value.Uint64()
	}
	return heap, stacks
}

func mb(n uint64) string { return fmt.Sprintf("%d MB", n>>20) }
