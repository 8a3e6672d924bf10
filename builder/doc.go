// Package builder runs the build command, one build at a time.
package builder
