// Package watcher watches a source tree and emits debounced batches of
// the files whose content really changed.
//
// # What is watched
//
// Every directory under Config.Paths (default: the root) that is not
// pruned, recursively. With fsnotify (the default) each such directory
// holds one watch; a directory created later is watched as soon as its
// creation is seen, then listed, so files written into it before the
// watch existed are found and reported as changed. A removed or renamed
// directory is forgotten: its watch is dropped and its files are
// reported as deleted. Symbolic links to files are followed; links to
// directories are not entered. With Config.Poll > 0 there are no watches:
// the tree is walked at that interval instead.
//
// A file counts when it matches an Include glob (or Include is empty),
// no Exclude glob, and none of the rules below. Globs are doublestar
// patterns matched against slash paths relative to Config.Root, so
// "**/*.go" also matches "main.go".
//
// # What is ignored
//
// A directory is pruned (never entered, never watched, nothing under it
// counts) when it is a version control folder (.git, .hg, .svn, .jj),
// node_modules, or .mcpflow; when it is, or lies under, a Config.Ignore
// path; when an Exclude glob matches it, alone or with "/**" appended;
// or, with Config.GitIgnore, when git would ignore it. Files are ignored
// on the same grounds, and so are editor scratch files: *.swp, *.swx,
// *~, .#*, 4913, *___jb_tmp___, *___jb_old___, and .DS_Store.
//
// Config.GitIgnore honours the .gitignore files of the tree and of its
// parent directories up to the repository's top, each scoped to its
// directory, and the repository's .git/info/exclude, with git's
// precedence (deeper files win; within a file, the last matching line).
// A .gitignore edited while watching takes effect at once: newly ignored
// paths are dropped silently, newly visible ones count as changed.
// info/exclude and .gitignore files above the watched paths are read at
// start only; the global core.excludesFile is not read.
//
// # Debounce
//
// Each relevant event (one on a file that counts, or on a directory the
// tree holds) restarts a quiet time of Config.Debounce; when it runs out
// the window closes and its changes form one Batch. Config.MaxWait caps a
// window from its first event, so an endless stream of events still
// yields batches. A window in which nothing really changed yields no
// Batch.
//
// # Guarantees
//
//   - Only real changes: a file's content hash (size and modification
//     time for files over 64 MiB) is taken at the initial scan and after
//     each change. A write of identical bytes, a chmod or a touch yields
//     nothing. In-place writes, atomic saves (write a temporary file,
//     rename it over the target), delete and recreate, creation and
//     deletion all count.
//   - Batch.Paths is sorted, without duplicates, relative to the root.
//   - Nothing written under a pruned directory or to an ignored path can
//     produce a Batch, so build output configured in Config.Ignore never
//     triggers the next build.
//   - When the kernel drops events (fsnotify's ErrEventOverflow), the
//     tree is rescanned and what changed is reported.
//   - Run never blocks on a slow receiver: later changes merge into the
//     waiting Batch. Run does not close its channel, and every goroutine
//     it starts has stopped when it returns.
//   - Run returns as soon as its context is done, also while the initial
//     scan lists a large tree or hashes large files: shutdown never waits
//     for the scan.
package watcher
