package resources

import "testing"

func TestIsTempName(t *testing.T) {
	for name, want := range map[string]bool{
		".model.bin.tend-part-123456":     true,
		".5.tend-part-42":                 true,
		".geo.tend-stage-99":              true,
		".geo.tend-stage-99.old":          true,
		".geo.tend-link-0a1b2c3d4e5f":     true,
		".a.tend-part-1.tend-part-2":      true,
		"model.bin.tend-part-1":           false, // tend's names start with a dot
		".tend-part-1":                    false, // and have a name before the kind
		".mine.tend-part-x":               false,
		".mine.tend-part-":                false,
		".mine.tend-partial-1":            false,
		".geo.tend-link-xyz":              false,
		".model.bin.tend.json":            false,
		".tend-state.json":                false,
		".model.bin.tend-part-12.backup":  false,
		".model.bin.tend-stage-12.old.gz": false,
	} {
		if got := isTempName(name); got != want {
			t.Errorf("isTempName(%q) = %v, want %v", name, got, want)
		}
	}
}
