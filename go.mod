module github.com/dont-cli/dont

go 1.26.8
