package repo_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
)

// Order declares its indexes next to its fields.
type Order struct {
	mgm.DefaultModel `bson:",inline"`
	Number           string    `bson:"number" index:"unique"`
	Customer         string    `bson:"customer" index:"name=byCustomer,order=1"`
	Placed           time.Time `bson:"placed" index:"name=byCustomer,order=2,desc"`
}

// OrderSummary is another model of Order's collection whose byCustomer
// index disagrees with Order's.
type OrderSummary struct {
	mgm.DefaultModel `bson:",inline"`
	Customer         string `bson:"customer" index:"name=byCustomer"`
}

func (*OrderSummary) CollectionName() string { return "orders" }

// WithIndexes creates the indexes the tags declare, and refuses an
// existing index that conflicts with a declared one, naming both.
func ExampleWithIndexes() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	orders, err := repo.New[*Order](nil, repo.WithDatabase(db), repo.WithIndexes())
	if err != nil {
		panic(err)
	}
	cur, err := orders.Collection().Indexes().List(ctx)
	if err != nil {
		panic(err)
	}
	var specs []bson.Raw
	if err := cur.All(ctx, &specs); err != nil {
		panic(err)
	}
	var lines []string
	for _, s := range specs {
		unique, _ := s.Lookup("unique").BooleanOK()
		lines = append(lines, fmt.Sprint(s.Lookup("name").StringValue(), " ", s.Lookup("key"), " unique: ", unique))
	}
	sort.Strings(lines) // the server lists them in an order of its own
	fmt.Println(strings.Join(lines, "\n"))

	_, err = repo.New[*OrderSummary](nil, repo.WithDatabase(db), repo.WithIndexes())
	fmt.Println(errors.Is(err, repo.ErrIndexConflict))
	fmt.Println(err)
	// Output:
	// _id_ {"_id": {"$numberInt":"1"}} unique: false
	// byCustomer {"customer": {"$numberInt":"1"},"placed": {"$numberInt":"-1"}} unique: false
	// number_1 {"number": {"$numberInt":"1"}} unique: true
	// true
	// repo.New[*repo_test.OrderSummary]: collection "orders": declared index byCustomer {customer: 1} (declared by field Customer `index:"name=byCustomer"`) and existing index byCustomer {customer: 1, placed: -1} have the same name with other keys; drop the existing index or change the declaration: repo: declared index conflicts with an existing index
}
