package tracing

import (
	"context"
	"errors"

	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/sequence"
	"go.opentelemetry.io/otel/metric"
)

// observe registers the observable instruments of the allocator and the
// relays, read when the meter collects.
func observe(meter metric.Meter, a *sequence.Allocator, relays []*outbox.Relay) error {
	var errs []error
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	gauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, err := meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return g
	}
	var insts []metric.Observable
	var read []func(metric.Observer)
	if a != nil {
		handed := counter("mgmevents.sequence.handed_out", "{number}", "Numbers the sequence allocator handed out.")
		back := counter("mgmevents.sequence.given_back", "{number}", "Numbers the sequence allocator gave back to the server.")
		blocks := counter("mgmevents.sequence.blocks", "{block}", "Blocks of numbers the sequence allocator fetched.")
		trips := counter("mgmevents.sequence.round_trips", "{round_trip}", "Counter round trips the sequence allocator waited for.")
		insts = append(insts, handed, back, blocks, trips)
		read = append(read, func(o metric.Observer) {
			s := a.Stats()
			o.ObserveInt64(handed, s.HandedOut)
			o.ObserveInt64(back, s.GivenBack)
			o.ObserveInt64(blocks, s.Blocks)
			o.ObserveInt64(trips, s.RoundTrips)
		})
	}
	if len(relays) > 0 {
		delivered := counter("mgmevents.outbox.delivered", "{message}", "Outbox messages published and removed from their documents.")
		failed := counter("mgmevents.outbox.failed", "{attempt}", "Outbox publish attempts that failed.")
		dead := counter("mgmevents.outbox.dead_lettered", "{message}", "Outbox messages the relays moved to the dead letters.")
		waiting := gauge("mgmevents.outbox.dead_letters", "{message}", "Outbox messages in the dead letters when a relay last counted them.")
		hung := gauge("mgmevents.outbox.hung", "{publish}", "Outbox publishes the relays gave up on at their deadline that have not returned.")
		pending := gauge("mgmevents.outbox.pending", "{event}", "Undelivered outbox events in the collections a relay serves, as the relay that counted last counted them.")
		age, err := meter.Float64ObservableGauge("mgmevents.outbox.oldest_pending_age", metric.WithUnit("s"),
			metric.WithDescription("How long ago the oldest of those undelivered outbox events was recorded; 0 when none."))
		errs = append(errs, err)
		insts = append(insts, delivered, failed, dead, waiting, hung, pending, age)
		read = append(read, func(o metric.Observer) {
			var s, last outbox.Stats // last: of the relay that counted the pending events last
			var most int64
			for _, r := range relays {
				rs := r.Stats()
				s.Delivered += rs.Delivered
				s.Failed += rs.Failed
				s.DeadLettered += rs.DeadLettered
				s.Hung += rs.Hung
				most = max(most, rs.DeadLetters)
				if rs.Counted.After(last.Counted) {
					last = rs
				}
			}
			o.ObserveInt64(delivered, s.Delivered)
			o.ObserveInt64(failed, s.Failed)
			o.ObserveInt64(dead, s.DeadLettered)
			o.ObserveInt64(waiting, most)
			o.ObserveInt64(hung, s.Hung)
			o.ObserveInt64(pending, last.Pending)
			o.ObserveFloat64(age, last.OldestAge.Seconds())
		})
	}
	if err := errors.Join(errs...); err != nil || len(insts) == 0 {
		return err
	}
	_, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, f := range read {
			f(o)
		}
		return nil
	}, insts...)
	return err
}
