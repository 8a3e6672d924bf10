// Package watcher watches source trees and emits debounced batches of changed paths.
package watcher

import (
	_ "github.com/bmatcuk/doublestar/v4"
	_ "github.com/charmbracelet/log"
	_ "github.com/fsnotify/fsnotify"
)
