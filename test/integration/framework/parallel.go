package framework

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// Parallel runs f(i) for i in [0, n) on at most workers goroutines and
// returns the first error, which cancels the context of the others and
// stops the rest from starting.
func Parallel(ctx context.Context, workers, n int, f func(ctx context.Context, i int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(max(workers, 1))
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error { return f(ctx, i) })
	}
	return g.Wait()
}
