// Python definition files of a feature repository (Feast's feature_repo/*.py):
// `strata features plan/apply` runs Debian's python3 on them with the strata
// package importable and loads the objects they define.
#pragma once

#include <string>
#include <vector>

#include <strata/core/result.h>
#include <strata/features/repo.h>

namespace strata::cli {

// The definitions the repository's *.py files hold, as documents for
// LoadFeatureRepo (none without .py files; python is then not run). The
// interpreter is $STRATA_PYTHON or /usr/bin/python3; the strata package is
// found through $STRATA_PYTHONPATH, else python/ next to this binary (a build
// tree), else the interpreter's own path. InvalidArgument lists the problems
// as "file.py:LINE: what".
Result<std::vector<features::DefinitionDocument>> CollectPythonDefinitions(
    const std::string& repo_dir);

}  // namespace strata::cli
