package executor_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/runblock/runblock/executor"
)

// BenchmarkSchedulerSubmit measures the scheduler's overhead per job against
// calling the Runner directly, with one user or many users submitting from
// parallel goroutines into a queue that is often non-empty.
func BenchmarkSchedulerSubmit(b *testing.B) {
	ctx := context.Background()
	req := executor.Request{Code: "print(1)"}
	b.Run("direct", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := instant.Run(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	for _, users := range []int{1, 100} {
		b.Run(fmt.Sprintf("users=%d", users), func(b *testing.B) {
			s := executor.NewScheduler(instant, executor.Config{Concurrency: 2, QueueSize: 1 << 16, MaxPerUser: 1 << 16})
			b.Cleanup(func() { _ = s.Close(ctx) })
			var n atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				user := fmt.Sprintf("u%d", n.Add(1)%int64(users))
				for pb.Next() {
					if _, err := s.Submit(ctx, executor.Job{User: user, Request: req}); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
