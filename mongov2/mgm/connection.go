// Written by hand in place of mgm v3.5.0's connection.go
// (github.com/kamva/mgm, Apache License 2.0, see LICENSE), which connects
// with driver v1's NewClient and Client.Connect; driver v2 has Connect.

package mgm

import (
	"context"
	"errors"
	"time"

	"github.com/mgmevents/mgmevents/mongov2/mgm/internal/util"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

var config *Config
var client *mongo.Client
var db *mongo.Database

// Config struct contains extra configuration properties for the mgm package.
type Config struct {
	// Set to 10 second (10*time.Second) for 10 second timeout.
	CtxTimeout time.Duration
}

// NewCtx function creates and returns a new context with the specified timeout.
func NewCtx(timeout time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	// The caller cannot cancel it (mgm's API): release it when it ends.
	context.AfterFunc(ctx, cancel)
	return ctx
}

// Ctx function creates and returns a new context with a default timeout value.
func Ctx() context.Context {
	return ctx()
}

func ctx() context.Context {
	return NewCtx(config.CtxTimeout)
}

// NewClient returns a new mongodb client.
func NewClient(opts ...*options.ClientOptions) (*mongo.Client, error) {
	return mongo.Connect(opts...)
}

// NewCollection returns a new collection with the supplied database.
func NewCollection(db *mongo.Database, name string, opts ...options.Lister[options.CollectionOptions]) *Collection {
	coll := db.Collection(name, opts...)

	return &Collection{Collection: coll}
}

// ResetDefaultConfig resets the configuration values, client and database.
func ResetDefaultConfig() {
	config = nil
	client = nil
	db = nil
}

// SetDefaultConfig initializes a new default config with the specified
// configuration, database name and client options.
func SetDefaultConfig(conf *Config, dbName string, opts ...*options.ClientOptions) (err error) {
	if conf == nil {
		conf = defaultConf()
	}
	config = conf
	if client, err = NewClient(opts...); err != nil {
		return err
	}
	db = client.Database(dbName)
	return nil
}

// CollectionByName returns a new collection using the current configuration values.
func CollectionByName(name string, opts ...options.Lister[options.CollectionOptions]) *Collection {
	return NewCollection(db, name, opts...)
}

// DefaultConfigs returns the current configuration values, client and database.
func DefaultConfigs() (*Config, *mongo.Client, *mongo.Database, error) {
	if util.AnyNil(config, client, db) {
		return nil, nil, nil, errors.New("please setup default config before acquiring it")
	}
	return config, client, db, nil
}

// defaultConf is the default config values.
func defaultConf() *Config {
	return &Config{CtxTimeout: 10 * time.Second}
}
