package spec

// Options are the inputs of Load besides the file itself.
type Options struct {
	Vars     map[string]string // --var NAME=VALUE, added to the substitution variables
	Environ  []string          // tend's own environment (os.Environ()), the base of every process's env
	Hostname string            // BSCONFIG_IHOST and the default instance.name
	Limits   map[string]string // CPU_LIMIT, CPU_GUARANTEE, MEM_LIMIT, MEM_GUARANTEE where set (cgroup)
}

// Load reads, decodes (strictly), defaults, validates and substitutes the spec at path,
// reads its env_files and value_from secrets, and returns the resolved spec. The error
// is either a one-line error naming the file or *Errors listing every field error.
func Load(path string, opts Options) (*Spec, error) {
	panic("not implemented")
}
