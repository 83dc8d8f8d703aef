package cli

import "github.com/urfave/cli/v2"

// urfave/cli asks a command's flags for their names many times at each parse: for each
// flag, again for every flag it looks up (runFlagActions → IsSet → lookupFlag), and
// every answer is a regexp replace per name (FlagNames strips the "name, alias" form of
// cli v1). That was about a hundred regexp runs before `tend run` reached its action,
// 0.17 ms of every launch (bench/README.md in its git history, "Series 5"). tend's flag names are single
// words: these flags answer with their Name and Aliases as they are, and are otherwise
// the flag they wrap.
type (
	boolFlag        struct{ *cli.BoolFlag }
	durationFlag    struct{ *cli.DurationFlag }
	intFlag         struct{ *cli.IntFlag }
	stringFlag      struct{ *cli.StringFlag }
	stringSliceFlag struct{ *cli.StringSliceFlag }
)

func (f boolFlag) Names() []string        { return plainNames(f.Name, f.Aliases) }
func (f durationFlag) Names() []string    { return plainNames(f.Name, f.Aliases) }
func (f intFlag) Names() []string         { return plainNames(f.Name, f.Aliases) }
func (f stringFlag) Names() []string      { return plainNames(f.Name, f.Aliases) }
func (f stringSliceFlag) Names() []string { return plainNames(f.Name, f.Aliases) }

func plainNames(name string, aliases []string) []string {
	return append([]string{name}, aliases...)
}

// withPlainNames is flags with each flag of the kinds above wrapped.
func withPlainNames(flags []cli.Flag) []cli.Flag {
	out := make([]cli.Flag, len(flags))
	for i, f := range flags {
		switch f := f.(type) {
		case *cli.BoolFlag:
			out[i] = boolFlag{f}
		case *cli.DurationFlag:
			out[i] = durationFlag{f}
		case *cli.IntFlag:
			out[i] = intFlag{f}
		case *cli.StringFlag:
			out[i] = stringFlag{f}
		case *cli.StringSliceFlag:
			out[i] = stringSliceFlag{f}
		default:
			out[i] = f
		}
	}
	return out
}

// unwrapFlag is the urfave/cli flag that f is or wraps.
func unwrapFlag(f cli.Flag) cli.Flag {
	switch f := f.(type) {
	case boolFlag:
		return f.BoolFlag
	case durationFlag:
		return f.DurationFlag
	case intFlag:
		return f.IntFlag
	case stringFlag:
		return f.StringFlag
	case stringSliceFlag:
		return f.StringSliceFlag
	}
	return f
}
