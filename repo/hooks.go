package repo

import (
	"context"
	"fmt"

	"github.com/kamva/mgm/v3"
	"go.mongodb.org/mongo-driver/mongo"
)

// mgm's hooks, dispatched exactly as mgm v3.5.0 does: the ctx variant when
// the model has it, else the ctx-less one. (So a model's Creating(ctx)
// hides DefaultModel's Creating(), as it does in mgm itself.)

// recovered turns a panic in one of m's hooks into an error: mgm's own
// hooks dereference an embedded *mgm.DefaultModel, which may be nil.
func recovered(m mgm.Model, err *error) {
	if v := recover(); v != nil {
		*err = fmt.Errorf("%T's hook panicked: %v", m, v)
	}
}

func beforeCreate(ctx context.Context, m mgm.Model) (err error) {
	defer recovered(m, &err)
	if h, ok := m.(mgm.CreatingHookWithCtx); ok {
		if err := h.Creating(ctx); err != nil {
			return err
		}
	} else if h, ok := m.(mgm.CreatingHook); ok {
		if err := h.Creating(); err != nil {
			return err
		}
	}
	return saving(ctx, m)
}

func beforeUpdate(ctx context.Context, m mgm.Model) (err error) {
	defer recovered(m, &err)
	if h, ok := m.(mgm.UpdatingHookWithCtx); ok {
		if err := h.Updating(ctx); err != nil {
			return err
		}
	} else if h, ok := m.(mgm.UpdatingHook); ok {
		if err := h.Updating(); err != nil {
			return err
		}
	}
	return saving(ctx, m)
}

func saving(ctx context.Context, m mgm.Model) error {
	if h, ok := m.(mgm.SavingHookWithCtx); ok {
		return h.Saving(ctx)
	} else if h, ok := m.(mgm.SavingHook); ok {
		return h.Saving()
	}
	return nil
}

func afterCreate(ctx context.Context, m mgm.Model) (err error) {
	defer recovered(m, &err)
	if h, ok := m.(mgm.CreatedHookWithCtx); ok {
		if err := h.Created(ctx); err != nil {
			return err
		}
	} else if h, ok := m.(mgm.CreatedHook); ok {
		if err := h.Created(); err != nil {
			return err
		}
	}
	return saved(ctx, m)
}

func afterUpdate(ctx context.Context, m mgm.Model, res *mongo.UpdateResult) (err error) {
	defer recovered(m, &err)
	if h, ok := m.(mgm.UpdatedHookWithCtx); ok {
		if err := h.Updated(ctx, res); err != nil {
			return err
		}
	} else if h, ok := m.(mgm.UpdatedHook); ok {
		if err := h.Updated(res); err != nil {
			return err
		}
	}
	return saved(ctx, m)
}

func saved(ctx context.Context, m mgm.Model) error {
	if h, ok := m.(mgm.SavedHookWithCtx); ok {
		return h.Saved(ctx)
	} else if h, ok := m.(mgm.SavedHook); ok {
		return h.Saved()
	}
	return nil
}

func beforeDelete(ctx context.Context, m mgm.Model) error {
	if h, ok := m.(mgm.DeletingHookWithCtx); ok {
		return h.Deleting(ctx)
	} else if h, ok := m.(mgm.DeletingHook); ok {
		return h.Deleting()
	}
	return nil
}

func afterDelete(ctx context.Context, m mgm.Model, res *mongo.DeleteResult) error {
	if h, ok := m.(mgm.DeletedHookWithCtx); ok {
		return h.Deleted(ctx, res)
	} else if h, ok := m.(mgm.DeletedHook); ok {
		return h.Deleted(res)
	}
	return nil
}
