package encryption

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// ReencryptProgress is what Reencrypt reports after each batch.
type ReencryptProgress struct {
	Scanned   int64 // documents read so far
	Rewritten int64 // documents rewritten so far
	Skipped   int64 // documents left alone because a value does not decrypt (see Reencrypt)
}

// ReencryptOption configures Reencrypt.
type ReencryptOption func(*reencryptOptions)

type reencryptOptions struct {
	batch    int
	progress func(ReencryptProgress)
}

// WithReencryptBatch sets how many documents Reencrypt reads and rewrites per
// round trip; the default is 500.
func WithReencryptBatch(n int) ReencryptOption { return func(o *reencryptOptions) { o.batch = n } }

// WithReencryptProgress sets a function Reencrypt calls after each batch.
func WithReencryptProgress(f func(ReencryptProgress)) ReencryptOption {
	return func(o *reencryptOptions) { o.progress = f }
}

// Reencrypt brings every document of coll, which holds models of
// modelType, up to date with the key ring, in batches: a value encrypted
// with a key other than the current one is encrypted again with the
// current one, under the same binding (see below), and a blind index made with another index key (see
// WithIndexKey) is computed again. It returns how many documents it
// rewrote. Run it after making a new key current; once it returns, the
// old key can leave the ring (keep it as WithIndexKey if it made the blind
// indexes).
//
// Each document is rewritten with a filter on the values it read, so a
// document changed meanwhile by the application is left alone (it was
// written with the current key). Processes still running with an older
// ring may write old keys meanwhile: run it again after they are gone.
//
// A document with a value that cannot be decrypted (tampered with, written
// around the encryption, or on a key no longer in the ring) is skipped and
// counted in ReencryptProgress.Skipped, and the rest is rewritten; the
// error returned at the end matches ErrDecrypt, counts them and names the
// first. An unbound value stays unbound: binding it to the document it is
// found in would launder a copy taken from another document.
func (x *Encryption) Reencrypt(ctx context.Context, coll *mongo.Collection, modelType reflect.Type, opts ...ReencryptOption) (int64, error) {
	o := reencryptOptions{batch: 500}
	for _, opt := range opts {
		opt(&o)
	}
	if o.batch < 1 {
		return 0, fmt.Errorf("encryption: Reencrypt: batch size %d: want ≥ 1", o.batch)
	}
	p, err := x.plan(modelType)
	if p == nil || err != nil {
		return 0, err
	}
	proj := bson.D{{Key: "_id", Value: 1}}
	for name, f := range p.fields {
		proj = append(proj, bson.E{Key: name, Value: 1})
		if f.Eq {
			proj = append(proj, bson.E{Key: f.BlindIndex(), Value: 1})
		}
	}
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).
		SetProjection(proj).SetBatchSize(int32(o.batch)))
	if err != nil {
		return 0, fmt.Errorf("encryption: Reencrypt %s: %w", coll.Name(), err)
	}
	defer cur.Close(ctx)
	var done ReencryptProgress
	var firstSkip error
	var batch []mongo.WriteModel
	flush := func() error {
		if len(batch) > 0 {
			res, err := coll.BulkWrite(ctx, batch, options.BulkWrite().SetOrdered(false))
			if err != nil {
				return fmt.Errorf("encryption: Reencrypt %s: %w", coll.Name(), err)
			}
			done.Rewritten += res.ModifiedCount
			batch = batch[:0]
		}
		if o.progress != nil {
			o.progress(done)
		}
		return nil
	}
	for cur.Next(ctx) {
		done.Scanned++
		m, err := x.refresh(p, coll.Name(), cur.Current)
		if errors.Is(err, ErrDecrypt) {
			done.Skipped++
			if firstSkip == nil {
				firstSkip = err
			}
			continue
		}
		if err != nil {
			return done.Rewritten, err
		}
		if m != nil {
			batch = append(batch, m)
		}
		if done.Scanned%int64(o.batch) == 0 {
			if err := flush(); err != nil {
				return done.Rewritten, err
			}
		}
	}
	if err := cur.Err(); err != nil {
		return done.Rewritten, fmt.Errorf("encryption: Reencrypt %s: %w", coll.Name(), err)
	}
	if err := flush(); err != nil {
		return done.Rewritten, err
	}
	if firstSkip != nil {
		return done.Rewritten, fmt.Errorf("encryption: Reencrypt %s: %d documents skipped, the rest rewritten; the first: %w", coll.Name(), done.Skipped, firstSkip)
	}
	return done.Rewritten, nil
}

// refresh returns the update that brings doc up to date, or nil when it
// is.
func (x *Encryption) refresh(p *encPlan, coll string, doc bson.Raw) (mongo.WriteModel, error) {
	id, err := doc.LookupErr("_id")
	if err != nil {
		return nil, nil // cannot be filtered on, nor bound
	}
	filter := bson.D{{Key: "_id", Value: id}}
	var set bson.D
	for name, f := range p.fields {
		stored, err := doc.LookupErr(name)
		if err != nil {
			continue
		}
		v, err := x.decryptValue(coll, name, id, stored)
		if err != nil {
			return nil, err
		}
		_, payload := stored.Binary()
		h, _ := parseSealed(payload)
		stale := h.keyID != x.current.id
		if f.Eq {
			want, err := x.blindIndexOf(name, coll, v)
			if err != nil {
				return nil, err
			}
			_, got, _ := doc.Lookup(f.BlindIndex()).BinaryOK()
			stale = stale || !bytes.Equal(got, want)
		}
		if !stale {
			continue
		}
		filter = append(filter, bson.E{Key: name, Value: stored})
		b := unboundValue
		if h.bound {
			b = boundTo(id)
		}
		if set, err = x.appendEncrypted(set, f, coll, v, b); err != nil {
			return nil, err
		}
	}
	if set == nil {
		return nil, nil
	}
	return mongo.NewUpdateOneModel().SetFilter(filter).SetUpdate(bson.D{{Key: "$set", Value: set}}), nil
}
