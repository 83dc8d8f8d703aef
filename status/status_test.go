package status

import (
	"encoding/json"
	"testing"
	"time"
)

// Reasons, instance, resource and cgroup states are typed, but the document's JSON
// is what it was with plain strings: clients parse it.
func TestDocumentJSONOfTypedReasonsAndStates(t *testing.T) {
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	doc := Document{
		Instance:       "demo",
		State:          InstanceRunning,
		Installed:      NewCondition(true, ReasonPrepared, "", at),
		Ready:          NewCondition(false, ReasonContainersNotReady, "web: not ready", at),
		InitContainers: []InitContainer{},
		Containers:     []Container{},
		Resources:      []Resource{{Name: "model.bin", State: ResourceReady, ChecksumOK: true}},
		DynamicResources: []DynamicResource{{Name: "geo", Revision: 3, State: ResourceRolledBack, ActiveRevision: 2,
			Reason: "verify failed"}},
		Revisions: []Revision{},
		Cgroups:   Cgroups{Mode: CgroupsOff, Reason: "/sys/fs/cgroup is read-only"},
	}
	got, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"instance":"demo","revision":"","state":"running",` +
		`"installed":{"status":"True","reason":"Prepared","message":"","last_transition_time":"2024-05-01T12:00:00.000Z"},` +
		`"ready":{"status":"False","reason":"ContainersNotReady","message":"web: not ready","last_transition_time":"2024-05-01T12:00:00.000Z"},` +
		`"init_containers":[],"containers":[],` +
		`"resources":[{"name":"model.bin","state":"ready","checksum_ok":true,"reason":"","bytes_done":0,"bytes_total":null}],` +
		`"dynamic_resources":[{"name":"geo","revision":3,"state":"rolled_back","active_revision":2,"reason":"verify failed"}],` +
		`"reload_error":"","revisions":[],"console_dropped_lines":0,"cgroups":{"mode":"off","reason":"/sys/fs/cgroup is read-only"}}`
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	var back Document
	if err := json.Unmarshal(got, &back); err != nil || back.State != InstanceRunning || back.Ready.Reason != ReasonContainersNotReady ||
		back.DynamicResources[0].State != ResourceRolledBack || back.Cgroups.Mode != CgroupsOff {
		t.Fatalf("read back: %+v, %v", back, err)
	}
}

// An exit's reason is typed, its JSON the plain words.
func TestExitReasonJSON(t *testing.T) {
	x := Exit{Code: 137, Signal: "SIGKILL", At: At(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)), Reason: ExitOOMKilled}
	got, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"code":137,"signal":"SIGKILL","at":"2024-05-01T12:00:00.000Z","reason":"OOMKilled"}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
