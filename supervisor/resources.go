package supervisor

import (
	"context"

	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// prepareResources fetches and verifies the static resources and the start-up
// revision of the dynamic ones while preparing (SPEC.md §3.1), before any init
// container runs.
func (sv *Supervisor) prepareResources(ctx context.Context, s *spec.Spec) error { return nil }

// reloadResources fetches what changed in next before any container is stopped, and
// switches dynamic resources (symlink, notify actions, verify, rollback) (SPEC.md
// §3.6, §6). It runs off the main loop.
func (sv *Supervisor) reloadResources(ctx context.Context, next *spec.Spec) error { return nil }

// resourceStatus fills the resources sections of the status document. It is called
// with sv.mu held.
func (sv *Supervisor) resourceStatus(doc *status.Document) {}
