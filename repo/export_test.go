package repo

import "context"

// The bodies of Insert and FindOne, without the check for interceptors,
// so that a test can show the check costs nothing.

func (r *Repository[T]) InsertBody(ctx context.Context, m T) error { return r.insert(ctx, nil, m) }

func (r *Repository[T]) FindOneBody(ctx context.Context, filter any) (T, error) {
	return r.findFirst(ctx, nil, filter, nil)
}
