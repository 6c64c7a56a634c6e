package async

import (
	"context"
	"errors"
	"sync"

	"github.com/mgmevents/mgmevents/events"
	"go.mongodb.org/mongo-driver/mongo"
)

// heldKey is the context key of a *Held.
type heldKey struct{}

// Held keeps the events that Listeners are given during a transaction
// until the transaction ends: Release queues them for their listeners once
// it has committed, Discard drops them when it aborts or its body is run
// again. Hold makes one; repo.Transaction makes one per attempt of its
// body, so that an async listener hears only of writes that committed.
//
// Only async Listeners hold events. Synchronous listeners run inline, as
// the operation runs: they see writes that the transaction may still
// abort (as Spring's plain @EventListener does, where an async listener
// here is its @TransactionalEventListener(AFTER_COMMIT)).
type Held struct {
	parent *Held // the Held of the enclosing transaction, or nil
	mu     sync.Mutex
	items  []heldItem
	state  heldState
}

type heldState uint8

const (
	heldOpen heldState = iota
	heldReleased
	heldDiscarded
)

// heldItem is one held event: the listener, the publisher's context and a
// copy of the event, as HandleEvent took them.
type heldItem struct {
	a   *Listener
	ctx context.Context
	e   *events.Event
}

// Hold returns a context carrying a new Held, and the Held. A Listener
// given an After* event with that context, or with one derived from it,
// keeps a copy in the Held and returns nil, instead of queueing it; Before* events are refused as always. Once the Held has
// been released or discarded, events given with its context are queued at
// once, as without Hold.
//
// A Held made inside another (ctx already carries one) hands its events to
// the outer one on Release, so that they reach their listeners when the
// outermost Held is released, and never if it is discarded.
func Hold(ctx context.Context) (context.Context, *Held) {
	h := &Held{parent: heldIn(ctx)}
	return context.WithValue(ctx, heldKey{}, h), h
}

func heldIn(ctx context.Context) *Held {
	h, _ := ctx.Value(heldKey{}).(*Held)
	return h
}

// hold keeps a copy of e for a, unless h has ended.
func (h *Held) hold(a *Listener, ctx context.Context, e *events.Event) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != heldOpen {
		return false
	}
	h.items = append(h.items, heldItem{a: a, ctx: ctx, e: e.Clone()})
	return true
}

// end marks h ended with state and returns what it held, or false when it
// had ended already.
func (h *Held) end(state heldState) ([]heldItem, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != heldOpen {
		return nil, false
	}
	h.state = state
	items := h.items
	h.items = nil
	return items, true
}

// Discard drops the held events and ends h. It returns how many it
// dropped; after the first Discard or Release it does nothing and returns
// 0.
func (h *Held) Discard() int {
	items, _ := h.end(heldDiscarded)
	return len(items)
}

// Release ends h and queues its events for their listeners, in the order
// they were taken, as HandleEvent queues an event: copied, and subject to
// the listener's overflow policy, waiting for room (OverflowBlock) until
// ctx is done. Each listener's context carries the values of the context
// its event was published with, without the transaction's session
// (mongo.SessionFromContext returns nil), which has ended by then.
//
// An event that cannot be queued (the listener is closed, its queue is
// full) makes an error: Release returns them joined, an *events.ListenerError for
// each. After the first Release or Discard it does nothing and returns
// nil. The events of a Held made inside another go to the outer one
// instead; if that has ended, they are queued now when it was released and
// dropped when it was discarded.
func (h *Held) Release(ctx context.Context) error {
	items, ok := h.end(heldReleased)
	if !ok {
		return nil
	}
	if p := h.parent; p != nil && p.adopt(items) {
		return nil
	}
	var errs []error
	for i := range items {
		it := &items[i]
		dctx := &detached{Context: ctx, values: afterCommit(it.ctx)}
		if err := it.a.HandleEvent(dctx, it.e); err != nil {
			errs = append(errs, failed(it.e, it.a.l, err))
		}
	}
	return errors.Join(errs...)
}

// adopt takes items of an inner Held, unless p has ended; items of a
// discarded p are dropped (adopt reports true), those of a released p are
// left to the caller to queue.
func (h *Held) adopt(items []heldItem) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch h.state {
	case heldOpen:
		h.items = append(h.items, items...)
		return true
	case heldDiscarded:
		return true
	}
	return h.parent != nil && h.parent.adopt(items)
}

// afterCommit returns ctx's values without a Held (HandleEvent queues at
// once) and without a session.
func afterCommit(ctx context.Context) context.Context {
	return context.WithValue(mongo.NewSessionContext(ctx, nil), heldKey{}, (*Held)(nil))
}
