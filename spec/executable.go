package spec

// Resource.Executable (`executable: true`) makes a static resource a program: the
// file is put in place with mode 0755 instead of 0644, after its checksum matched.
// ISS runs its iss_hook_* resources this way; the convert package sets it for them.

// checkExecutable rejects executable on an extracted resource: a directory is no
// program, and the modes inside an archive are its own.
func checkExecutable(s *Spec, c *collector) {
	for i, r := range s.Resources {
		if r.Executable && r.Extract {
			c.addf(join(index("resources", i), "executable"), "applies to a file; an extracted archive keeps the modes of its entries")
		}
	}
}
