package softdelete_test

import (
	"context"
)

var ctx = context.Background()

type userKey struct{}
