module github.com/awaken-lua/awaken-lua

go 1.26

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/fsnotify/fsnotify v1.10.1
	github.com/yuin/gopher-lua v1.1.2
)

require golang.org/x/sys v0.13.0 // indirect
