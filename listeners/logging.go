package listeners

import (
	"context"
	"log/slog"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
)

// Logging writes one log record per event, like Spring's
// LoggingEventListener: the event, the operation, the collection, the
// model type and the model's ID, and the counts of deletes and updates.
// Documents, filters, updates and pipelines are left out unless
// WithDocuments is given, because they may hold personal data; even then,
// the values of the model's encrypted fields (package encryption) are shown as
// "[encrypted]" in documents, and the filters, updates and pipelines of a
// model with encrypted fields are not shown at all.
//
// With WithSlow, Logging is an interceptor too (events.Interceptor): it
// logs every repository operation slower than the threshold at Warn (see
// Intercept).
type Logging struct {
	logger    *slog.Logger
	level     slog.Leveler
	documents bool
	slow      time.Duration
}

// NewLogging returns the listener; a nil logger means slog.Default(). It
// applies WithLevel, WithDocuments and WithSlow.
func NewLogging(logger *slog.Logger, opts ...LoggingOption) *Logging {
	if logger == nil {
		logger = slog.Default()
	}
	g := &Logging{logger: logger, level: slog.LevelDebug}
	for _, o := range opts {
		o(g)
	}
	return g
}

// HandleEvent logs e. It never fails.
func (g *Logging) HandleEvent(ctx context.Context, e *events.Event) error {
	if !g.logger.Enabled(ctx, g.level.Level()) {
		return nil
	}
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs,
		slog.String("event", e.Type.String()),
		slog.String("op", e.Op.String()),
		slog.String("collection", e.Collection))
	if e.ModelType != nil {
		attrs = append(attrs, slog.String("model", e.ModelType.String()))
	}
	if m, ok := e.Model.(mgm.Model); ok {
		attrs = append(attrs, slog.Any("id", m.GetID()))
	} else if e.Document != nil {
		if id, err := e.Document.LookupErr("_id"); err == nil {
			attrs = append(attrs, slog.String("id", id.String()))
		}
	}
	switch e.Type {
	case events.AfterDelete:
		attrs = append(attrs, slog.Int64("deleted", e.DeletedCount))
	case events.BeforeUpdate:
		attrs = append(attrs, slog.Bool("upsert", e.Upsert))
	case events.AfterUpdate:
		attrs = append(attrs, slog.Int64("matched", e.MatchedCount), slog.Int64("modified", e.ModifiedCount),
			slog.Int64("upserted", e.UpsertedCount))
		if e.UpsertedID != nil {
			attrs = append(attrs, slog.Any("upsertedId", e.UpsertedID))
		}
	}
	if e.Field != "" {
		attrs = append(attrs, slog.String("field", e.Field))
	}
	if g.documents {
		names := secretNames(e.ModelType) // never log what is encrypted
		if e.Document != nil {
			doc := any(e.Document)
			if names != nil {
				doc = redactSecrets(e.Document, names, 0)
			}
			attrs = append(attrs, slog.String("document", extJSON(doc)))
		}
		for _, d := range [...]struct {
			key string
			v   any
		}{{"filter", e.Filter}, {"update", e.Update}, {"pipeline", e.Pipeline}} {
			if d.v != nil && names != nil {
				// Logging runs before Encryption: a plaintext compared with
				// an encrypted field may sit anywhere ($expr, $where, a
				// pipeline expression), under any key. Fail closed.
				attrs = append(attrs, slog.String(d.key, redactedQuery))
			} else if d.v != nil {
				attrs = append(attrs, slog.Any(d.key, d.v))
			}
		}
	}
	g.logger.LogAttrs(ctx, g.level.Level(), "mgmevents "+e.Type.String(), attrs...)
	return nil
}
