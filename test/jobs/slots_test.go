package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSlotPool: the node's slots go to the heaviest waiting case first,
// the first to ask among equals; a waiter whose context ends leaves the
// queue (or gives back the slot it was just handed).
func TestSlotPool(t *testing.T) {
	p := &slotPool{free: 1, openAfter: 100 * time.Millisecond}
	require.NoError(t, p.acquire(t.Context(), time.Minute)) // opens it, a moment later

	order := make(chan string, 4)
	wait := func(name string, weight time.Duration) {
		go func() {
			if p.acquire(t.Context(), weight) == nil {
				order <- name
			}
		}()
		// each waiter asks before the next: seq orders them
		require.Eventually(t, func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			return len(p.waiting) > 0 && p.waiting[len(p.waiting)-1].weight == weight
		}, time.Second, time.Millisecond)
	}
	wait("short", time.Minute)
	wait("long", 10*time.Minute)
	wait("short too", time.Minute)

	gone, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- p.acquire(gone, time.Hour) }()
	require.Eventually(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.waiting) == 4 }, time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)

	var got []string
	for range 3 {
		p.release()
		got = append(got, <-order)
	}
	assert.Equal(t, []string{"long", "short", "short too"}, got)
	p.release()
	p.mu.Lock()
	defer p.mu.Unlock()
	assert.Equal(t, 1, p.free)
	assert.Empty(t, p.waiting)
}
