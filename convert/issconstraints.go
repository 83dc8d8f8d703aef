package convert

import (
	"math"
	"strconv"
	"strings"

	"github.com/tend-sh/tend/spec"
)

// issPorto converts the porto container of an ISS configuration: the limits in
// its constraints become instance.limits (the whole instance was one porto container,
// as tend's containers together are one cgroup subtree, docs/reference.md "Foreign formats"); every other key
// is a warning of its own.
func (c *conv) issPorto(y node) {
	for _, f := range c.fields(y) {
		if f.key != "constraints" {
			c.drop("instance.limits", f.val.src(), "porto container field "+f.key+" has no place in tend")
			continue
		}
		for _, k := range c.fields(f.val) {
			v, ok := c.str(k.val)
			if !ok {
				continue
			}
			c.issConstraint(k.key, strings.TrimSpace(v), k.val.src())
		}
	}
}

// issConstraint sets the instance limit of one constraint key.
func (c *conv) issConstraint(key, v string, src Source) {
	l := &c.s.Instance.Limits
	switch key {
	case "memory.limit_in_bytes", "memory.max", "memory_limit":
		if n, ok := memparse(v); ok {
			l.Memory = spec.Bytes{Opt: spec.Some(n)}
			c.from("instance.limits.memory", src)
			return
		}
	case "pids.max":
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			l.Pids = spec.Count{Opt: spec.Some(n)}
			c.from("instance.limits.pids", src)
			return
		}
	case "cpu.max", "cpu_limit":
		if cores, ok := issCores(key, v); ok {
			l.CPU = spec.Cores{Opt: spec.Some(cores)}
			c.from("instance.limits.cpu", src)
			return
		}
	default:
		c.drop("instance.limits", src, "constraint "+key+" has no tend limit")
		return
	}
	if v == "max" || v == "" || v == "0" {
		c.drop("instance.limits", src, "constraint "+key+" = "+strconv.Quote(v)+" sets no limit")
		return
	}
	c.drop("instance.limits", src, "constraint "+key+": cannot read "+strconv.Quote(v))
}

// memparse reads a size as the kernel's cgroup files and porto read it: a number with
// an optional K, M, G, T (or k, m, g, t) suffix, each 1024 times the last.
func memparse(v string) (int64, bool) {
	mult := int64(1)
	if i := strings.IndexAny(v, "kKmMgGtT"); i == len(v)-1 && i > 0 {
		mult = 1 << (10 * (1 + strings.IndexByte("kmgt", strings.ToLower(v[i:])[0])))
		v = v[:i]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, false
	}
	return n * mult, true
}

// issCores reads cgroup v2's cpu.max ("QUOTA PERIOD", microseconds) or porto's
// cpu_limit ("1.5c", cores).
func issCores(key, v string) (float64, bool) {
	if key == "cpu.max" {
		quota, period, ok := strings.Cut(v, " ")
		q, err1 := strconv.ParseFloat(quota, 64)
		p, err2 := strconv.ParseFloat(period, 64)
		if !ok || err1 != nil || err2 != nil || q <= 0 || p <= 0 {
			return 0, false
		}
		return math.Round(q/p*1000) / 1000, true
	}
	cores, err := spec.ParseCPU(v)
	return cores, err == nil
}
