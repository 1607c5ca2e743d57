// The parts of the _strata extension that live in translation units of their
// own (py_vector.cc, py_features.cc): each registers its classes on the module,
// called once from PYBIND11_MODULE in strata_py.cc after the exception types
// exist (strata.Error and its subclasses, which they look up on the module).
#pragma once

#include <pybind11/pybind11.h>

#include <strata/core/status.h>

namespace strata::python {

// Raises the strata.* exception for a non-OK Status (strata_py.cc: kNotFound
// -> NotFoundError, kInvalidArgument -> InvalidArgumentError, ...).
[[noreturn]] void RaiseStatus(const Status& st);

// strata.vector: the engine's collections and the embedded Milvus API.
void RegisterVector(pybind11::module_& m);

// The feature store (python/py_features.cc): the submodule _strata._features
// behind strata.features.
void RegisterFeatures(pybind11::module_& m);

}  // namespace strata::python
