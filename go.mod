module github.com/awaken-lua/awaken-lua

go 1.26

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/yuin/gopher-lua v1.1.2
)
