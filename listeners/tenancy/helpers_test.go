package tenancy_test

import (
	"context"
)

var ctx = context.Background()
