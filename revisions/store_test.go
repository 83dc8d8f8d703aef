package revisions

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A resource kept in a revision's store is found by its checksum, also after the
// store is opened again (a restart of tend), and is gone with the revision.
func TestStoreKeepsResourcesByChecksum(t *testing.T) {
	dir := t.TempDir()
	st := Open(dir)
	if st.Disabled != nil {
		t.Fatal(st.Disabled)
	}
	src := filepath.Join(dir, "model.bin")
	if err := os.WriteFile(src, []byte("weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveSpec("v1", []byte("containers: []\n")); err != nil {
		t.Fatal(err)
	}
	if err := st.Link("v1", "model.bin", src, "MD5:abc"); err != nil {
		t.Fatal(err)
	}
	os.Remove(src) // the next revision replaced it in place: the store keeps its own
	want := []string{filepath.Join(dir, ".tend/revisions/v1/resources/model.bin")}
	if got := st.Stored("MD5:abc"); !slices.Equal(got, want) {
		t.Fatalf("Stored = %v, want %v", got, want)
	}
	if b, err := os.ReadFile(want[0]); err != nil || string(b) != "weights" {
		t.Fatalf("the stored file: %q, %v", b, err)
	}
	if st.Stored("MD5:other") != nil {
		t.Errorf("another checksum found a file")
	}
	again := Open(dir)
	again.Known("v1")
	if got := again.Stored("MD5:abc"); !slices.Equal(got, want) {
		t.Errorf("after reopening: Stored = %v, want %v", got, want)
	}
	if b, err := again.Spec("v1"); err != nil || string(b) != "containers: []\n" {
		t.Errorf("Spec = %q, %v", b, err)
	}
	if st.DiskBytes("v1") < int64(len("weights")) {
		t.Errorf("DiskBytes = %d", st.DiskBytes("v1"))
	}
	if err := again.Remove("v1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".tend/revisions/v1")); !os.IsNotExist(err) {
		t.Errorf("the store of v1 is still there: %v", err)
	}
	if again.Stored("MD5:abc") != nil {
		t.Errorf("a removed revision's file is still offered")
	}
}

// The state survives: written atomically, read back as it was.
func TestStoreState(t *testing.T) {
	dir := t.TempDir()
	st := Open(dir)
	if s, err := st.Load(); err != nil || s.Active != "" {
		t.Fatalf("no state yet: %+v, %v", s, err)
	}
	in := State{SpecFileDigest: "abc", Active: "v2", Revisions: []*Revision{{ID: "v1", Phase: Installed, Stable: true}, {ID: "v2", Phase: Active}}}
	if err := st.Save(in); err != nil {
		t.Fatal(err)
	}
	out, err := Open(dir).Load()
	if err != nil || out.Active != "v2" || out.SpecFileDigest != "abc" || len(out.Revisions) != 2 || !out.Revisions[0].Stable {
		t.Errorf("Load = %+v, %v", out, err)
	}
	if k1, k2 := st.Key(), Open(dir).Key(); len(k1) != 32 || string(k1) != string(k2) {
		t.Errorf("the key is not kept: %x, %x", k1, k2)
	}
}

// A symlink planted at .tend leading out of instance.dir is not followed.
func TestStoreBeneath(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	if err := os.Symlink(out, filepath.Join(dir, ".tend")); err != nil {
		t.Fatal(err)
	}
	st := Open(dir)
	st.Save(State{Active: "x"})
	if _, err := os.Stat(filepath.Join(out, "revisions.json")); err == nil {
		t.Errorf("the state was written through a symlink out of instance.dir")
	}
}
