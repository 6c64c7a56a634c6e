package repo

import (
	"context"

	"go.mongodb.org/mongo-driver/bson"
)

// The bodies of Insert and FindOne, without the check for interceptors,
// so that a test can show the check costs nothing.

func (r *Repository[T]) InsertBody(ctx context.Context, m T) error { return r.insert(ctx, nil, m) }

func (r *Repository[T]) FindOneBody(ctx context.Context, filter any) (T, error) {
	return r.findFirst(ctx, nil, filter, nil)
}

// WatchChanges runs what Watch and ChangeStream.Next run around the
// server, for tests on a server without change streams: BeforeQuery for
// pipeline, then the decoding of each change event's full document. It
// returns the pipeline Watch would send and the models.
func (r *Repository[T]) WatchChanges(ctx context.Context, pipeline any, changes ...bson.Raw) (any, []T, error) {
	e, sent, err := r.watchQuery(ctx, pipeline, nil)
	if err != nil {
		return nil, nil, r.wrap("Watch", err)
	}
	defer release(e)
	var out []T
	for _, c := range changes {
		m, err := r.change(ctx, e, c)
		if err != nil {
			return sent, out, r.wrap("Watch", err)
		}
		out = append(out, m)
	}
	return sent, out, nil
}
