package spec

import (
	"regexp"
	"sync"
	"time"
)

// Values and defaults of the revision fields of instance (docs/reference.md
// "Updates and rollback").
const (
	ActivateAuto   = "auto"   // a new revision is activated as soon as it is installed
	ActivateManual = "manual" // it stays installed until `tend activate ID`

	// When an init container runs (init_containers[].at).
	AtActivate = "activate" // when the revision is activated (and at start)
	AtInstall  = "install"  // when the revision is installed, in its store

	// VarRevisionDir is {REVISION_DIR}: the revision's store, for the init
	// containers that run at install. It is known once the revision's id is (after
	// loading): substitution writes RevisionDirMark, which the install replaces.
	VarRevisionDir  = "REVISION_DIR"
	RevisionDirMark = "\uE000REVISION_DIR\uE000"

	DefaultKeepRevisions = 2
	DefaultRollbackAfter = "0s"

	// MaxRevisionLen bounds instance.revision.
	MaxRevisionLen = 64
)

var revisionRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]+$`) })

// ValidRevision reports whether id may name a revision: [A-Za-z0-9._-], 1 to 64
// characters, and not "." or ".." (it names a directory of the store).
func ValidRevision(id string) bool {
	return len(id) <= MaxRevisionLen && revisionRe().MatchString(id) && id != "." && id != ".."
}

// RollbackAfterDuration is instance.rollback_after; 0 when unset or invalid
// (validation refuses an invalid one).
func (in *Instance) RollbackAfterDuration() time.Duration {
	d, err := time.ParseDuration(in.RollbackAfter)
	if err != nil || d < 0 {
		return 0
	}
	return d
}

// revisions checks the revision fields of instance.
func (k *checker) revisions(in *Instance) {
	if in.Revision != "" && !ValidRevision(in.Revision) {
		k.c.addf("instance.revision", "must be 1-%d characters of A-Z a-z 0-9 . _ - (not . or ..), got %q", MaxRevisionLen, in.Revision)
	}
	k.atLeast("instance.keep_revisions", in.KeepRevisions.Get(), 0)
	k.oneOf("instance.activate", in.Activate, ActivateAuto, ActivateManual)
	if d, err := time.ParseDuration(in.RollbackAfter); err != nil {
		k.c.addf("instance.rollback_after", "must be a duration such as 120s or 2m, got %q", in.RollbackAfter)
	} else if d < 0 {
		k.c.addf("instance.rollback_after", "must not be negative, got %s", in.RollbackAfter)
	}
}
