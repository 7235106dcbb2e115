// Package version holds the build version, set by the Makefile through -ldflags.
package version

// Version is overridden at link time (-X github.com/openaaa/openaaa/internal/version.Version=...).
var Version = "dev"
