package repo

import (
	"fmt"
	"reflect"

	"go.mongodb.org/mongo-driver/mongo"
)

// bulkCheck refuses, before any of them is written, the write models that
// BulkWrite could not run whole: a nil one (untyped, or a nil pointer of
// any of the six kinds), one of a kind it does not know, a nil or foreign
// Document or Replacement, a nil Filter or Update, a delete model's
// Collation or Hint. The error names the first such model's index, so
// that a bad model never leaves the ones before it written.
func (r *Repository[T]) bulkCheck(models []mongo.WriteModel) error {
	for i, wm := range models {
		if err := r.bulkCheckOne(wm); err != nil {
			return fmt.Errorf("models[%d] (%T): %w; no write model was written", i, wm, err)
		}
	}
	return nil
}

// bulkCheckOne refuses write model wm when BulkWrite could not run it.
func (r *Repository[T]) bulkCheckOne(wm mongo.WriteModel) error {
	if wm == nil || reflect.ValueOf(wm).IsNil() {
		return fmt.Errorf("nil write model: %w", ErrInvalidArgument)
	}
	switch w := wm.(type) {
	case *mongo.InsertOneModel:
		return r.bulkCheckDoc(w.Document, "Document")
	case *mongo.UpdateOneModel:
		return bulkCheckUpdate(w.Filter, w.Update)
	case *mongo.UpdateManyModel:
		return bulkCheckUpdate(w.Filter, w.Update)
	case *mongo.ReplaceOneModel:
		if err := needFilter(w.Filter); err != nil {
			return err
		}
		return r.bulkCheckDoc(w.Replacement, "Replacement")
	case *mongo.DeleteOneModel:
		if w.Collation != nil || w.Hint != nil {
			return errDeleteOptions
		}
		return needFilter(w.Filter)
	case *mongo.DeleteManyModel:
		if w.Collation != nil || w.Hint != nil {
			return errDeleteOptions
		}
		return needFilter(w.Filter)
	}
	return fmt.Errorf("not a write model BulkWrite knows: %w", ErrInvalidArgument)
}

// bulkCheckDoc refuses a write model's document that is not a non-nil T.
func (r *Repository[T]) bulkCheckDoc(doc any, field string) error {
	m, err := r.bulkModel(doc, field)
	if err != nil {
		return err
	}
	if v := reflect.ValueOf(m); !v.IsValid() || v.IsNil() {
		return fmt.Errorf("%s is a nil %v: %w (%w)", field, r.schema.Type, ErrInvalidArgument, ErrNilModel)
	}
	return nil
}

// bulkCheckUpdate refuses an update model's nil filter or nil update.
func bulkCheckUpdate(filter, update any) error {
	if err := needFilter(filter); err != nil {
		return err
	}
	if update == nil {
		return fmt.Errorf("nil Update: %w", ErrInvalidArgument)
	}
	switch rv := reflect.ValueOf(update); rv.Kind() {
	case reflect.Map, reflect.Slice, reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return fmt.Errorf("nil Update (%T): %w", update, ErrInvalidArgument)
		}
	}
	return nil
}
