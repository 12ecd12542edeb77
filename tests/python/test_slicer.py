"""The 3D Slicer CLI module: `ctdenoise --xml` is a valid Slicer Execution Model description, and
the command line Slicer builds from it runs the filter it names, with the parameters it lists."""

import os
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import ctdenoise
from conftest import structured

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.environ.get("CTDENOISE_CLI", os.path.join(REPO, "build", "ctdenoise"))
pytestmark = pytest.mark.skipif(not (os.path.exists(CLI) and ctdenoise._core.has_io), reason="no ctdenoise CLI built")

PARAMETER_TAGS = {"integer", "float", "double", "string", "string-enumeration", "boolean"}


def module():
    xml = subprocess.run([CLI, "--xml"], check=True, capture_output=True, text=True).stdout
    return ET.fromstring(xml)


def test_xml_describes_one_module_with_both_filters():
    root = module()
    assert root.tag == "executable" and root.findtext("title")
    flags, names = [], []
    for element in root.iter():
        if element.tag in PARAMETER_TAGS:
            names.append(element.findtext("name"))
            flags.append(element.findtext("longflag"))
            assert element.findtext("default") is not None and element.findtext("label")
            if element.tag == "string-enumeration":
                assert element.findtext("default") in [e.text for e in element.findall("element")]
    assert len(set(flags)) == len(flags) and len(set(names)) == len(names)
    images = {i.findtext("channel"): int(i.findtext("index")) for i in root.iter("image") if i.findtext("index")}
    assert images == {"input": 0, "output": 1}
    optional = [(i.findtext("name"), i.findtext("channel")) for i in root.iter("image") if i.findtext("longflag")]
    assert optional == [("noiseVolume", "input")]
    enum = next(e for e in root.iter("string-enumeration") if e.findtext("name") == "filter")
    assert [e.text for e in enum.findall("element")] == ["nlm", "bilateral"]


def slicer_command(values, input_path, output_path):
    """As Slicer runs a CLI module: every parameter's flag with its value, an optional image's flag
    where one is chosen, then the images by index."""
    command = [CLI]
    for element in module().iter():
        name = element.findtext("name")
        if element.tag in PARAMETER_TAGS:
            command += [element.findtext("longflag"), str(values.get(name, element.findtext("default")))]
        elif element.tag == "image" and element.findtext("longflag") and name in values:
            command += [element.findtext("longflag"), str(values[name])]
    return command + [str(input_path), str(output_path)]


@pytest.mark.parametrize("values,direct", [
    ({"filter": "nlm", "h": "25", "searchRadius": 2, "device": "cpu"},
     ["nlm", "--h", "25", "--search-radius", "2", "--device", "cpu"]),
    ({"filter": "nlm", "searchRadius": 2, "device": "cpu", "noiseVolume": "NOISE"},
     ["nlm", "--search-radius", "2", "--device", "cpu", "--noise-from", "NOISE"]),
    ({"filter": "bilateral", "sigmaRange": "40", "sigmaSpatialMm": 1.5, "device": "cpu"},
     ["bilateral", "--sigma-range", "40", "--sigma-spatial-mm", "1.5", "--device", "cpu"]),
])
def test_slicers_command_line_runs_the_named_filter(tmp_path, rng, values, direct):
    image = structured(rng, (6, 30, 28))
    source = tmp_path / "in.nrrd"
    ctdenoise.write(source, image)
    noise = tmp_path / "noise.nrrd"  # noise alone, for the noise volume
    ctdenoise.write(noise, rng.normal(0, 20, (8, 40, 40)).astype(np.float32))
    values = {k: (str(noise) if v == "NOISE" else v) for k, v in values.items()}
    direct = [str(noise) if v == "NOISE" else v for v in direct]
    slicer = subprocess.run(slicer_command(values, source, tmp_path / "slicer.nrrd"), check=True, capture_output=True,
                            text=True)
    # Slicer's progress bar: a start, fractions up to 1, an end, for each stage that has progress.
    lines = [line for line in slicer.stdout.splitlines() if line.startswith("<filter-")]
    assert lines[0].startswith("<filter-start>") and lines[-1].startswith("<filter-end>"), slicer.stdout
    fractions = [float(line[len("<filter-progress>"):-len("</filter-progress>")]) for line in lines
                 if line.startswith("<filter-progress>")]
    assert fractions and fractions[-1] == 1.0 and fractions == sorted(fractions)
    subprocess.run([CLI, *direct, "-q", str(source), str(tmp_path / "direct.nrrd")], check=True)
    np.testing.assert_array_equal(ctdenoise.read(tmp_path / "slicer.nrrd")[0], ctdenoise.read(tmp_path / "direct.nrrd")[0])


def test_a_bad_slicer_invocation_is_one_clear_line(tmp_path):
    result = subprocess.run([CLI, "--filter", "median", "a.nrrd", "b.nrrd"], capture_output=True, text=True)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "nlm or bilateral" in result.stderr
