"""A Modbus TCP server (pymodbus) for the interop tests.

usage: python3 pymodbus_server.py SPEC.json PORT

SPEC lists points as {"table", "address", "type", "order", "raw"}; this
script encodes each raw value itself, with Python's struct module, so the
test compares seam's decoder with an independent encoder.
"""
import json
import struct
import sys

from pymodbus.datastore import (ModbusSequentialDataBlock, ModbusServerContext,
                                ModbusSlaveContext)
from pymodbus.server import StartTcpServer

FORMATS = {"int16": ">h", "uint16": ">H", "int32": ">i", "uint32": ">I", "float32": ">f"}


def registers(point):
    """The point's registers in its word order (A: most significant byte)."""
    if point["type"] == "bool":
        return [1 if point["raw"] else 0]
    raw = point["raw"]
    if point["type"] != "float32":
        raw = int(raw)
    value = struct.pack(FORMATS[point["type"]], raw)
    order = point.get("order") or "ABCD"
    if len(value) == 2:
        if order in ("BADC", "DCBA"):
            value = value[::-1]
        return [value[0] << 8 | value[1]]
    wire = bytes(value["ABCD".index(c)] for c in order)
    return [wire[0] << 8 | wire[1], wire[2] << 8 | wire[3]]


def main():
    spec = json.load(open(sys.argv[1]))
    port = int(sys.argv[2])
    tables = {t: [0] * 256 for t in ("holding", "input", "coil", "discrete")}
    for point in spec["points"]:
        regs = registers(point)
        tables[point["table"]][point["address"]:point["address"] + len(regs)] = regs
    slave = ModbusSlaveContext(
        di=ModbusSequentialDataBlock(0, tables["discrete"]),
        co=ModbusSequentialDataBlock(0, tables["coil"]),
        hr=ModbusSequentialDataBlock(0, tables["holding"]),
        ir=ModbusSequentialDataBlock(0, tables["input"]),
        zero_mode=True)
    context = ModbusServerContext(slaves={spec.get("unit", 1): slave}, single=False)
    StartTcpServer(context=context, address=("127.0.0.1", port))


if __name__ == "__main__":
    main()
