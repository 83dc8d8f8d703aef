package cgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// markXattrs are the extended attributes that name the instance (its real
// instance.dir) whose tend made a <start>/containers or <start>/init (docs/reference.md "What a container cannot make tend do"):
// trusted.* where tend is root (only a process with CAP_SYS_ADMIN may set or read
// it), else user.* (cgroup2 since Linux 5.7). The first that can be set is used; both
// are read.
var markXattrs = []string{"trusted.tend.instance", "user.tend.instance"}

// errNotOurs is claim's answer for a directory another instance's tend made, or that
// holds groups no tend marked.
var errNotOurs = errors.New("not this instance's: tend cleans only its own")

// instanceMark is the instance dir is marked with, "" for none.
func instanceMark(dir string) string {
	buf := make([]byte, 4096)
	for _, name := range markXattrs {
		if n, err := unix.Getxattr(dir, name, buf); err == nil && n > 0 {
			return string(buf[:n])
		}
	}
	return ""
}

// mkKind makes a <start>/containers or <start>/init directory and marks it with the
// tree's instance.
func (t *Tree) mkKind(dir string) error {
	if err := mkdir(dir); err != nil {
		return err
	}
	setMark(dir, t.instance)
	return nil
}

// setMark marks dir with instance, where it can (see markXattrs); without a mark the
// next tend takes what it finds there for no tend's and leaves it.
func setMark(dir, instance string) {
	if instance == "" || instanceMark(dir) == instance {
		return
	}
	for _, name := range markXattrs {
		if unix.Setxattr(dir, name, []byte(instance), 0) == nil {
			return
		}
	}
}

// claim makes the locked <start>/containers dir instance's: one marked with instance
// is (an earlier tend of it crashed: removeLeftovers cleans it), and so is one without
// a mark and without groups (it is marked now); one marked with another instance, or
// holding groups without a mark, is not.
func claim(dir, instance string) error {
	if instance == "" {
		return nil
	}
	switch mark := instanceMark(dir); {
	case mark == instance:
		return nil
	case mark != "":
		return fmt.Errorf("%s holds the cgroups of instance %s (%w)", dir, mark, errNotOurs)
	case len(subdirs(dir)) > 0:
		return fmt.Errorf("%s holds cgroups that no tend marked (%w)", dir, errNotOurs)
	}
	setMark(dir, instance)
	return nil
}

// subdirs are the names of the directories in dir (the groups below a cgroup).
func subdirs(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

// leftoverKinds are where an earlier tend's groups can be, below a starting cgroup.
var leftoverKinds = []string{KindContainers, KindInit, InstanceGroup + "/" + KindContainers, InstanceGroup + "/" + KindInit}

// removeLeftovers kills and removes every group an earlier tend of the same instance
// left below the tree's starting cgroup, in every hierarchy (claim made sure they are
// this instance's), and <start>/init and <start>/instance with them: the next groups
// are made anew, with no old process or limit in them. On a hybrid host the v1
// hierarchies are looked at only when the cgroup2 one had a leftover. Called by Open,
// before the first Group.
func (t *Tree) removeLeftovers() {
	places := t.places
	if t.unified != "" {
		places = []place{{dir: t.unified}}
	}
	found := t.removeIn(places, t.unified != "")
	if t.unified != "" && found {
		if v1, err := t.v1Places(); err == nil {
			t.removeIn(v1, false)
		}
	}
}

// removeIn removes the leftovers below places and says whether there were any. unified:
// places is a hybrid tree's cgroup2 directory, whose groups hold every process.
func (t *Tree) removeIn(places []place, unified bool) bool {
	found := false
	for _, kind := range leftoverKinds {
		var names []string
		for _, p := range places {
			for _, name := range subdirs(filepath.Join(p.dir, kind)) {
				if !slices.Contains(names, name) {
					names = append(names, name)
				}
			}
		}
		for _, name := range names {
			found = true
			g := &Group{mode: t.Mode, path: filepath.Join(t.start, kind, name), fd: -1}
			if unified {
				g.unified = filepath.Join(places[0].dir, kind, name)
			} else {
				g.places = under(places, filepath.Join(kind, name)) // a hybrid tree's v1 side has no member()
			}
			ctx, cancel := context.WithTimeout(context.Background(), leftoverKillTimeout)
			g.Kill(ctx)
			cancel()
			g.Remove()
		}
	}
	for _, p := range places {
		for _, sub := range []string{InstanceGroup + "/" + KindContainers, InstanceGroup + "/" + KindInit, InstanceGroup, KindInit} {
			unix.Rmdir(filepath.Join(p.dir, sub))
		}
	}
	return found
}
