module {{lib}}

go 1.24
