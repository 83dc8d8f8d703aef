package tests

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// A kept version of a dynamic resource that was changed on disk is not reused for a
// later revision with the same urls (checksum EMPTY:, as DRU specs write it): it is
// fetched again, and the containers see what the server has.
func TestResourceDynamicTamperedKeptVersionFetchedAgain(t *testing.T) {
	srv := newFileServer(t, map[string]string{"/v1": "the real v1", "/v2": "v2"})
	shared := t.TempDir()
	tp := start(t, geoSpec(srv, shared, 1, "/v1"))
	tp.waitStatus(15*time.Second, "geo ready", func(d status.Document) bool { return dynamicStatus(d, "geo").State == "ready" })
	writeSpec(t, tp, geoSpec(srv, shared, 2, "/v2"))
	post(t, tp, "/v1/reload")
	tp.waitStatus(15*time.Second, "revision 2 active", func(d status.Document) bool {
		g := dynamicStatus(d, "geo")
		return g.State == "ready" && g.ActiveRevision == 2
	})
	if err := os.WriteFile(filepath.Join(shared, "store", "1"), []byte("the fake v1"), 0o644); err != nil {
		t.Fatal(err)
	}

	writeSpec(t, tp, geoSpec(srv, shared, 3, "/v1"))
	post(t, tp, "/v1/reload")
	tp.waitStatus(15*time.Second, "revision 3 active", func(d status.Document) bool {
		g := dynamicStatus(d, "geo")
		return g.State == "ready" && g.ActiveRevision == 3
	})
	if b, _ := os.ReadFile(filepath.Join(shared, "geo")); string(b) != "the real v1" || srv.count("/v1") != 2 {
		t.Errorf("geo = %q with %d requests for v1, want the real v1 fetched again (2 requests)", b, srv.count("/v1"))
	}
}
