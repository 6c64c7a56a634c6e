package encryption_test

import (
	"context"
)

var ctx = context.Background()
