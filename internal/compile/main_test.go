package compile_test

const example = "../../contracts/examples/threemodule"
