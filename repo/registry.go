package repo

import (
	"fmt"

	"github.com/mgmevents/mgmevents/model"
	"go.mongodb.org/mongo-driver/bson/bsoncodec"
)

// checkStrict refuses reg, a registry given with WithRegistry, when it
// does not decode s's struct strictly (model.DecodesStrictly): the driver's
// struct codec decodes a stored "Tenant" into the field stored as
// "tenant", which the policies, comparing paths exactly, never see written.
func checkStrict(reg *bsoncodec.Registry, s *model.Schema) error {
	if model.DecodesStrictly(reg, s.Struct) {
		return nil
	}
	return fmt.Errorf("repo.New[%v]: WithRegistry: the registry does not decode %v strictly, so a key such as \"Tenant\" would decode into the field stored as \"tenant\"; build it from model.Registry() or call model.RegisterStrict on it before any decoding (and give %v no decoder of its own): %w",
		s.Type, s.Struct, s.Struct, ErrInvalidArgument)
}
