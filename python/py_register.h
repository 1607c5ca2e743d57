// The parts of the _strata extension that live in their own translation units:
// each adds its classes and functions to the module. PYBIND11_MODULE in
// strata_py.cc calls them after it has created the exception classes
// (strata.Error and its subclasses), which they look up on the module.
#pragma once

#include <pybind11/pybind11.h>

namespace strata::python {

// The feature store (python/py_features.cc): the submodule _strata._features
// behind strata.features.
void RegisterFeatures(pybind11::module_& m);

}  // namespace strata::python
