package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestWriteLoadsWarnsWhenBusy(t *testing.T) {
	var quiet, loaded bytes.Buffer
	writeLoads(&quiet, []Load{{Scenario: "relay", Before: 0.1, After: 0.9}})
	writeLoads(&loaded, []Load{{Scenario: "relay", Before: 0.1}, {Scenario: "mix", Before: 20, After: 21, Busy: busy(20)}})
	if !strings.Contains(quiet.String(), "relay 0.10→0.90") || strings.Contains(quiet.String(), "WARNING") {
		t.Errorf("quiet: %q", quiet.String())
	}
	if !strings.Contains(loaded.String(), "busy") || !strings.Contains(loaded.String(), "during: mix;") {
		t.Errorf("loaded: %q", loaded.String())
	}
}
