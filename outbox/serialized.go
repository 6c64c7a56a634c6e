package outbox

import (
	"context"
	"fmt"

	"github.com/mgmevents/mgmevents/internal/serverinfo"
	"go.mongodb.org/mongo-driver/mongo"
)

// serialized checks that db's client cannot lose a write of a document
// that holds events to a concurrent one. MongoDB applies each update of a
// document atomically. FerretDB 1.x reads the document, applies the update
// and writes the whole document back, so of two updates of one document
// on two connections one can erase the other: a relay's removal of
// delivered events erases a writer's change and the events it stored, or
// two relays erase each other's. There, writers and relays must share one
// client with a single connection (maxPoolSize 1), which makes the server
// apply their commands one at a time; any other client is refused.
func serialized(ctx context.Context, db *mongo.Database, who string) error {
	atomic, err := serverinfo.AtomicWrites(ctx, db)
	if err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	if atomic || serverinfo.OneConnection(db.Client()) {
		return nil
	}
	return fmt.Errorf("%w: %s: the server (FerretDB) applies an update by reading the document and writing it back whole, so an update on one connection can erase another's; on FerretDB, write outbox models and run the relay through one client with one connection (maxPoolSize=1)",
		ErrUnsupported, who)
}
