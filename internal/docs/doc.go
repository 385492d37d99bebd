// Package docs holds no code: its tests keep README.md and docs/ true to
// the tree. Every relative link and #anchor of the Markdown files resolves,
// every field of the JSON Schema is described in docs/json-schema.md, the
// README fits on a few screens and its test command is the one CI runs.
// The flags, hints, fault keys and exit statuses of docs/reference.md are
// checked by the packages that define them (internal/cli, internal/api).
package docs
