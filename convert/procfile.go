package convert

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tend-sh/tend/spec"
)

// foreman gives each process type PORT = 5000 + 100 * its index.
const (
	foremanBasePort = 5000
	foremanPortStep = 100
)

// herokuRelease is the process type Heroku runs once, before the others start, on
// each release (its release phase): never a process that stays up.
const herokuRelease = "release"

// procfile converts a Procfile: each `name: command` line is a container that
// restarts always, its command run through sh -c as foreman does; the release line
// is an init container, run once before them.
func procfile(data []byte, c *conv) {
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		n := i + 1
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		m := procfileLineRe().FindStringSubmatch(line)
		if m == nil || strings.TrimSpace(m[2]) == "" {
			c.errorf(Source{Path: fmt.Sprintf("line %d", n), Line: n}, "want `name: command`, got %q", line)
			continue
		}
		src := Source{Path: m[1], Line: n}
		if m[1] == herokuRelease && !c.hasInit(herokuRelease) {
			p := fmt.Sprintf("init_containers[%d]", len(c.s.InitContainers))
			c.s.InitContainers = append(c.s.InitContainers, spec.InitContainer{
				Name:    m[1],
				Command: shell("sh", "-c", strings.TrimSpace(m[2])),
			})
			c.from(p+".name", src)
			c.from(p+".command", src)
			c.approx(p, src, "an init container: it runs once, before the other processes start (Heroku's release phase), not as a process that restarts")
			continue
		}
		idx, ok := c.addContainer(src)
		if !ok {
			return
		}
		p := containerPath(idx)
		port := strconv.Itoa(foremanBasePort + foremanPortStep*idx)
		c.s.Containers[idx] = spec.Container{
			Name:          m[1],
			Command:       shell("sh", "-c", strings.TrimSpace(m[2])),
			Env:           []spec.EnvVar{{Name: "PORT", Value: port}},
			RestartPolicy: &spec.RestartPolicy{Mode: spec.ModeAlways},
		}
		c.from(p, src)
		c.from(p+".name", src)
		c.from(p+".command", src)
		c.note(p+".env", "PORT as foreman sets it: 5000 + 100 for each process type before it")
	}
}

// hasInit tells whether the spec has an init container named name.
func (c *conv) hasInit(name string) bool {
	for _, ic := range c.s.InitContainers {
		if ic.Name == name {
			return true
		}
	}
	return false
}
