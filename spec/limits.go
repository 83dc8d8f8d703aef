package spec

import (
	"fmt"
	"iter"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Values of Instance.Cgroups (docs/reference.md "Cgroups and limits").
const (
	CgroupsAuto     = "auto"     // cgroups where tend can create them, else off with a reason
	CgroupsRequired = "required" // tend exits 1 at start where it cannot
	CgroupsOff      = "off"      // no cgroups: process groups only
)

// Limits are the cgroup limits of a container, or in instance.limits those of all
// containers and init containers together (docs/reference.md "Cgroups and limits"). A field not written is unset
// (no limit); a written one holds the parsed value in canonical units, so consumers
// and render never see the written form ("1500m", "512Mi").
type Limits struct {
	CPU    Cores `yaml:"cpu,omitempty" json:"cpu,omitzero"`
	Memory Bytes `yaml:"memory,omitempty" json:"memory,omitzero"`
	Pids   Count `yaml:"pids,omitempty" json:"pids,omitzero"`
}

// Values are the limits as plain numbers, for the wiring that writes them to cgroups
// (spec does not import cgroup): cores, bytes and processes; 0 is no limit.
func (l Limits) Values() (cpu float64, memory, pids int64) {
	return l.CPU.Get(), l.Memory.Get(), l.Pids.Get()
}

// IsSet tells whether any limit is written.
func (l Limits) IsSet() bool {
	return l.CPU.IsSet() || l.Memory.IsSet() || l.Pids.IsSet()
}

// Cores is a CPU quantity in cores, written as a number, "1500m" or "1.5c" (ParseCPU).
// The embedded Opt gives Get and IsSet.
type Cores struct{ Opt[float64] }

// Bytes is a byte quantity, written as an integer or a number with Ki Mi Gi Ti or
// K M G T (ParseBytes); Get is in bytes.
type Bytes struct{ Opt[int64] }

// Count is a whole number above 0, such as a pids limit (ParseCount).
type Count struct{ Opt[int64] }

// quantity is implemented by Cores, Bytes and Count: parse reads what YAML decodes a
// scalar into (an int, a float64 or a string) and sets the field, to 0 when the value
// is invalid (the walker of decode.go reports it with its path and line).
type quantity interface{ parse(v any) error }

var quantityType = reflect.TypeFor[quantity]()

// isQuantity tells whether t is Cores, Bytes or Count. They embed an Opt, so the
// decoder's walker and the schema ask this before they take t for an Opt.
func isQuantity(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && reflect.PointerTo(t).Implements(quantityType)
}

func (c *Cores) parse(v any) error {
	x, err := ParseCPU(v)
	c.Opt = Some(x)
	return err
}

func (b *Bytes) parse(v any) error {
	x, err := ParseBytes(v)
	b.Opt = Some(x)
	return err
}

func (n *Count) parse(v any) error {
	x, err := ParseCount(v)
	n.Opt = Some(x)
	return err
}

// unmarshalQuantity decodes a scalar node into q. An invalid value is a *yaml.TypeError,
// which lets decoding go on: the walker has already reported it with its path.
func unmarshalQuantity(q quantity, n *yaml.Node) error {
	var v any
	if err := n.Decode(&v); err != nil {
		return err
	}
	if err := q.parse(v); err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	return nil
}

// UnmarshalYAML reads a number, "1500m" or "1.5c".
func (c *Cores) UnmarshalYAML(n *yaml.Node) error { return unmarshalQuantity(c, n) }

// UnmarshalYAML reads an integer or a number with a unit.
func (b *Bytes) UnmarshalYAML(n *yaml.Node) error { return unmarshalQuantity(b, n) }

// UnmarshalYAML reads a whole number.
func (n *Count) UnmarshalYAML(node *yaml.Node) error { return unmarshalQuantity(n, node) }

// UnmarshalJSON reads what UnmarshalYAML does (JSON is YAML); null leaves it unset.
func (c *Cores) UnmarshalJSON(data []byte) error { return yaml.Unmarshal(data, c) }

// UnmarshalJSON reads what UnmarshalYAML does (JSON is YAML); null leaves it unset.
func (b *Bytes) UnmarshalJSON(data []byte) error { return yaml.Unmarshal(data, b) }

// UnmarshalJSON reads what UnmarshalYAML does (JSON is YAML); null leaves it unset.
func (n *Count) UnmarshalJSON(data []byte) error { return yaml.Unmarshal(data, n) }

// MarshalYAML writes cores as a plain number (FormatCPU: 1.5, 2, never 1e+06), the
// canonical form render shows. Bytes and Count write their integer through Opt.
func (c Cores) MarshalYAML() (any, error) {
	if !c.IsSet() {
		return nil, nil
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Value: FormatCPU(c.Get())}, nil // plain: an int or a float as it reads
}

// quantity checks and parses a limit at path: a scalar the parser takes. The parser's
// error names the value and what is wrong with it ("12X": unknown unit "X" (...)).
func (w *walker) quantity(n *yaml.Node, t reflect.Type, path string) {
	var v any
	if n.Kind != yaml.ScalarNode || n.Decode(&v) != nil {
		w.c.structf(path, n.Line, "must be a number or a string with a unit, got %s", DescribeNode(n))
		return
	}
	if err := reflect.New(t).Interface().(quantity).parse(v); err != nil {
		w.c.structf(path, n.Line, "%v", err)
	}
}

// limitHints are names other tools give these fields (docker's and compose's
// mem_limit, cpus and pids_limit, pm2's max_memory_restart, Kubernetes' resources)
// and the field of tend that says the same, for the "did you mean" of an unknown field.
var limitHints = map[string]string{
	"memory_limit": "limits.memory", "mem_limit": "limits.memory", "memory": "limits.memory",
	"cpu_limit": "limits.cpu", "cpus": "limits.cpu", "cpu": "limits.cpu",
	"pids_limit": "limits.pids", "pids": "limits.pids",
	"resources":          "limits",
	"max_memory_restart": "memory_restart",
}

// limitHint is the "did you mean" for an unknown key of a mapping that has the field
// a limitHints entry names (instance, a container), or for limits where a command is
// not a container's; "" for any other.
func limitHint(key string, fields map[string]reflect.Type) string {
	_, hasCommand := fields["command"]
	_, hasLimits := fields["limits"]
	if (key == "limits" || key == "memory_restart") && hasCommand && !hasLimits {
		// An init container (or a command of a container): not rlimits, the nearest name.
		return " (limits and memory_restart are a container's; instance.limits covers init containers too)"
	}
	want, ok := limitHints[key]
	if !ok {
		return ""
	}
	field, _, _ := strings.Cut(want, ".")
	if _, has := fields[field]; !has {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", want)
}

// The variables that carry limits to the processes, as instancectl's (cgroup package).
const (
	limitCPUVar = "CPU_LIMIT" // cores, "1.5c"
	limitMemVar = "MEM_LIMIT" // bytes
)

// limitVars are CPU_LIMIT and MEM_LIMIT of the limits l sets, in the cgroup
// package's form (cores with up to 4 decimals and "c", bytes).
func limitVars(l Limits) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		cpu, memory, _ := l.Values()
		if cpu > 0 {
			c := strings.TrimRight(strings.TrimRight(strconv.FormatFloat(cpu, 'f', 4, 64), "0"), ".")
			if !yield(limitCPUVar, c+"c") {
				return
			}
		}
		if memory > 0 {
			yield(limitMemVar, strconv.FormatInt(memory, 10))
		}
	}
}
