package replication_test

import (
	"context"
	"testing"
	"time"

	"github.com/rolisdb/rolis/pkg/client"
)

// putUntilAcknowledged writes key through c until a write is acknowledged
// and returns how long after `since` (the fault) that was: the failover gap
// as a client sees it. Each attempt gets 500 ms, so a write stuck on a dead
// leader does not hide a faster new one for long; the test fails when no
// write is acknowledged within `limit` of `since`.
func putUntilAcknowledged(t *testing.T, c *client.Client, key string, since time.Time, limit time.Duration) time.Duration {
	t.Helper()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		err := c.Put(ctx, []byte(key), []byte("1"))
		cancel()
		if err == nil {
			return time.Since(since)
		}
		if time.Since(since) > limit {
			t.Fatalf("no write acknowledged within %v of the fault: %v", limit, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
