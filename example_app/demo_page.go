package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
)

// demoPage lists the users newest first, a page at a time, as a web page
// would: by keyset, each page starting after the last one's Next, so that
// a user inserted meanwhile neither repeats nor skips one, with the total.
func demoPage(ctx context.Context, out io.Writer, users *repo.Repository[*User]) error {
	fmt.Fprintln(out, "\n5. Page through the users, newest first, 10 a page, with the total (FindPage by keyset)")
	req := repo.PageRequest{Size: 10, Sort: bson.D{{Key: "longId", Value: -1}}, Count: true}
	for n := 1; ; n++ {
		page, err := users.FindPage(ctx, bson.D{}, req)
		if err != nil {
			return err
		}
		ids := make([]string, len(page.Models))
		for i, u := range page.Models {
			ids[i] = fmt.Sprint(u.LongID)
		}
		fmt.Fprintf(out, "   page %d of %d users: longId %s\n", n, page.Total, strings.Join(ids, " "))
		if !page.More {
			fmt.Fprintf(out, "   -> %d pages; page.Next of each is where the next one starts (PageRequest.After)\n", n)
			return nil
		}
		req.After = page.Next
	}
}
