package main

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// TestJobDecodesAsCassOperatorReadsIt: cass-operator v1.28.0's JobDetails (pkg/httphelper) has
// string fields only, submit_time and end_time included; a number there fails its decode, and
// a rebuild CassandraTask never completes (seen on the local cluster: "cannot unmarshal number
// into Go struct field JobDetails.submit_time of type string").
func TestJobDecodesAsCassOperatorReadsIt(t *testing.T) {
	type jobDetails struct { // the fields and types cass-operator decodes
		ID         string `json:"id"`
		Type       string `json:"type"`
		Status     string `json:"status"`
		SubmitTime string `json:"submit_time,omitempty"`
		EndTime    string `json:"end_time,omitempty"`
		Error      string `json:"error,omitempty"`
	}
	j := newJobs()
	ids := []string{j.run("rebuild", func() error { return nil }), j.run("rebuild", func() error { return errors.New("no source") })}
	for _, id := range ids {
		deadline := time.Now().Add(5 * time.Second)
		for {
			jb, _ := j.get(id)
			if jb.Status != jobWaiting || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		jb, ok := j.get(id)
		if !ok {
			t.Fatalf("job %s not found", id)
		}
		b, err := json.Marshal(jb)
		if err != nil {
			t.Fatal(err)
		}
		var d jobDetails
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("cass-operator cannot decode %s: %v", b, err)
		}
		if d.ID != id || d.SubmitTime == "" || d.EndTime == "" || (d.Status != jobCompleted && d.Status != jobError) {
			t.Errorf("decoded %+v from %s", d, b)
		}
	}
}
