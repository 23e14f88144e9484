module wasmmcp

go 1.24
