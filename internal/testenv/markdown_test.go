package testenv

import (
	"reflect"
	"strings"
	"testing"
)

const sampleDoc = "# Title\n\n" +
	"```sh\nnot marked\n```\n\n" +
	"<!-- test: cluster-doc -->\n" +
	"```sh\nmake images   # build\nTAG=x\n```\n\n" +
	"<!-- test: other -->\n```sh\nother tag\n```\n" +
	"text\n<!-- test: cluster-doc -->\n\n" +
	"````bash\necho '```'\n````\n"

func TestParseDocBlocks(t *testing.T) {
	got, err := ParseDocBlocks("doc.md", sampleDoc, "cluster-doc")
	if err != nil {
		t.Fatal(err)
	}
	want := []DocBlock{
		{File: "doc.md", Line: 8, Tag: "cluster-doc", Lang: "sh", Body: "make images   # build\nTAG=x\n"},
		{File: "doc.md", Line: 20, Tag: "cluster-doc", Lang: "bash", Body: "echo '```'\n"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if got[0].Name() != "doc.md:8" {
		t.Errorf("Name() = %q", got[0].Name())
	}
	other, err := ParseDocBlocks("doc.md", sampleDoc, "other")
	if err != nil || len(other) != 1 || other[0].Body != "other tag\n" {
		t.Errorf("tag other: %+v, %v", other, err)
	}
}

func TestParseDocBlocksErrors(t *testing.T) {
	for name, doc := range map[string]string{
		"no block":     "<!-- test: cluster-doc -->\ntext\n```sh\nx\n```\n",
		"at the end":   "<!-- test: cluster-doc -->\n\n",
		"never closed": "<!-- test: cluster-doc -->\n```sh\nx\n",
	} {
		if _, err := ParseDocBlocks("d.md", doc, "cluster-doc"); err == nil || !strings.Contains(err.Error(), "d.md:") {
			t.Errorf("%s: error %v; want one naming the file and line", name, err)
		}
	}
}

func TestMakeTargets(t *testing.T) {
	body := "make demo   # build, start STORE=x\n" +
		"make demo STORE=cassandra   # the same\n" +
		"make provision cluster-up images cluster-import   # provision\n" +
		"cd x && make -C y z\n" +
		"echo make not-a-target; make test | tee log\n"
	want := []string{"demo", "demo", "provision", "cluster-up", "images", "cluster-import", "test"}
	if got := MakeTargets(body); !reflect.DeepEqual(got, want) {
		t.Fatalf("MakeTargets = %q; want %q", got, want)
	}
}
