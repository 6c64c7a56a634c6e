package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// User is the reference design's model: a UUID and a number from a
// counter, filled in on insert.
type User struct {
	mgm.DefaultModel `bson:",inline"`
	UserID           string `bson:"userId" auto:"uuid"`
	LongID           int64  `bson:"longId" auto:"inc"`
	UserName         string `bson:"userName"`
}

// Order gets an order number: ORD, the date, and a counter that restarts
// each day.
type Order struct {
	mgm.DefaultModel `bson:",inline"`
	No               string `bson:"no" auto:"inc,format=ORD{date:060102}{seq:5}"`
	Item             string `bson:"item"`
}

// printer is a custom listener: it prints every event it sees.
func printer(out io.Writer, quiet *bool) events.Listener {
	return events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		if *quiet {
			return nil
		}
		what := ""
		switch m := e.Model.(type) {
		case *User:
			what = fmt.Sprintf(" userName=%q longId=%d", m.UserName, m.LongID)
		case *Order:
			what = fmt.Sprintf(" no=%q", m.No)
		}
		if e.Filter != nil && !e.Type.Before() && e.Type != events.AfterSave {
			what += fmt.Sprintf(" filter=%v deleted=%d", e.Filter, e.DeletedCount)
		}
		fmt.Fprintf(out, "    [event] %-13s %-10s %s%s\n", e.Type, e.Op, e.Collection, what)
		return nil
	})
}

func demoMain(args []string, out io.Writer) int {
	fs := flag.NewFlagSet("example_app", flag.ContinueOnError)
	fs.SetOutput(out)
	var sf serverFlags
	sf.register(fs, "shop")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx := context.Background()
	uri, stop, err := sf.start(ctx, out)
	if err != nil {
		return fail(out, err)
	}
	defer stop()
	if err := demo(ctx, out, uri, sf.db); err != nil {
		return fail(out, err)
	}
	return 0
}

func demo(ctx context.Context, out io.Writer, uri, dbName string) error {
	// mgm as usual, plus the registry that stores uuid.UUID as subtype 4,
	// on one connection: the outbox asks for it on FerretDB, whose updates
	// are not atomic across connections (docs/outbox.md).
	if err := mgm.SetDefaultConfig(nil, dbName, options.Client().ApplyURI(uri).SetRegistry(model.Registry()).SetMaxPoolSize(1)); err != nil {
		return err
	}
	defer mgm.ResetDefaultConfig()
	_, _, db, _ := mgm.DefaultConfigs()

	bus := events.NewBus()
	keys, err := autokeys.New(db)
	if err != nil {
		return err
	}
	defer keys.Close(ctx)                  // give unused numbers back even on an error; idempotent
	bus.Register(keys, events.Order(-100)) // keys first, before anyone looks at them
	quiet := false
	bus.Register(printer(out, &quiet))

	users, err := repo.New[*User](bus) // User's tags are checked here
	if err != nil {
		return err
	}
	orders, err := repo.New[*Order](bus)
	if err != nil {
		return err
	}

	fmt.Fprintln(out, "\n1. Insert a user: AutoKeys fills userId and longId on BeforeConvert")
	u := &User{UserName: "zwt"}
	if err := users.Insert(ctx, u); err != nil {
		return err
	}
	fmt.Fprintf(out, "   -> userId=%s longId=%d\n", u.UserID, u.LongID)

	fmt.Fprintln(out, "\n2. Find it by name: AfterLoad, then AfterConvert")
	found, err := users.FindOne(ctx, bson.M{"userName": "zwt", "longId": u.LongID})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   -> found %q with longId=%d, created %s\n", found.UserName, found.LongID, found.CreatedAt.Format("15:04:05"))

	fmt.Fprintln(out, "\n3. Update it: the keys are set, so they are kept")
	found.UserName = "zwt (renamed)"
	if err := users.Update(ctx, found); err != nil {
		return err
	}
	fmt.Fprintf(out, "   -> userId=%s longId=%d unchanged\n", found.UserID, found.LongID)

	fmt.Fprintln(out, "\n4. Ten goroutines insert three users each, at once (events not printed)")
	quiet = true
	var mu sync.Mutex
	lines := make([]string, 10)
	var all []int64
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for g := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var got []string
			for i := range 3 {
				w := &User{UserName: fmt.Sprintf("worker%d-%d", g, i)}
				if err := users.Insert(ctx, w); err != nil {
					errs <- err
					return
				}
				got = append(got, fmt.Sprint(w.LongID))
				mu.Lock()
				all = append(all, w.LongID)
				mu.Unlock()
			}
			lines[g] = fmt.Sprintf("   goroutine %d: longId %s", g, strings.Join(got, ", "))
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	for _, l := range lines {
		fmt.Fprintln(out, l)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	distinct := 1
	for i := 1; i < len(all); i++ {
		if all[i] != all[i-1] {
			distinct++
		}
	}
	fmt.Fprintf(out, "   -> %d numbers, %d distinct, from %d to %d\n", len(all), distinct, all[0], all[len(all)-1])
	if err := demoPage(ctx, out, users); err != nil {
		return err
	}
	quiet = false

	fmt.Fprintln(out, "\n6. An order with a formatted number")
	o := &Order{Item: "book"}
	if err := orders.Insert(ctx, o); err != nil {
		return err
	}
	fmt.Fprintf(out, "   -> order number %s\n", o.No)

	fmt.Fprintln(out, "\n7. Delete the first user: BeforeDelete, then AfterDelete")
	if err := users.Delete(ctx, found); err != nil {
		return err
	}
	n, err := users.Count(ctx, bson.D{})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   -> %d users left\n", n)

	seq, err := keys.Allocator().Sequence("users.longId")
	if err != nil {
		return err
	}
	// Closing gives back the numbers reserved in blocks but not used.
	if err := keys.Close(ctx); err != nil {
		return err
	}
	last, err := seq.Current(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nClosed the keys: longId numbers used up to %d, the rest given back. With -data DIR, the next run continues at %d.\n", last, last+1)
	if err := demoPolicies(ctx, out, db); err != nil {
		return err
	}
	return demoOutbox(ctx, out, db)
}
