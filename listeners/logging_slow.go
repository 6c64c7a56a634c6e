package listeners

import (
	"context"
	"log/slog"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/internal/opinfo"
)

// Intercepting reports whether Logging wraps repository operations: with
// WithSlow only. The bus asks once, at registration (see
// events.Interceptor).
func (g *Logging) Intercepting() bool { return g.slow > 0 }

// Intercept times the operation and, when it took longer than WithSlow's
// threshold, logs it at Warn, whatever WithLevel says: its method,
// collection, model and duration, and, when it failed, error.type and
// what failed (the listener and event of a veto, the server's code). The
// error's text may quote values (a duplicate key error quotes the key),
// so it is logged only with WithDocuments.
func (g *Logging) Intercept(ctx context.Context, o *events.Operation, next func(context.Context) error) error {
	if g.slow <= 0 {
		return next(ctx)
	}
	start := time.Now()
	err := next(ctx)
	d := time.Since(start)
	if d <= g.slow || !g.logger.Enabled(ctx, slog.LevelWarn) {
		return err
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs,
		slog.String("method", o.Method),
		slog.String("collection", o.Collection))
	if o.ModelType != nil {
		attrs = append(attrs, slog.String("model", o.ModelType.String()))
	}
	attrs = append(attrs, slog.Duration("duration", d), slog.Duration("threshold", g.slow))
	if err != nil {
		attrs = append(attrs, slog.String("error.type", opinfo.ErrorType(err)))
		if g.documents {
			attrs = append(attrs, slog.String("error", err.Error()))
		} else {
			attrs = append(attrs, slog.String("error", opinfo.Describe(err)))
		}
	}
	g.logger.LogAttrs(ctx, slog.LevelWarn, "mgmevents slow operation", attrs...)
	return err
}
