module github.com/awaken-lua/awaken-lua

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/fsnotify/fsnotify v1.10.1
	github.com/yuin/gopher-lua v1.1.2
	mvdan.cc/sh/v3 v3.14.1
)

require golang.org/x/sys v0.47.0 // indirect
