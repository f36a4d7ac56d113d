"""Room templates: the receptacle and object types AI2-THOR rooms hold, and where they go.

Four room kinds (kitchen, bathroom, bedroom, living room) as in ALFRED's floor plans.
Each receptacle type has a count range and whether it opens; each object type lists the
receptacle types it may start in. ``SIMILAR_*`` are the look-alikes that real agents
confuse (a substitute object, a neighbouring receptacle); ``ACCEPTS`` is what each receptacle
type holds (PDDL ``canContain``) and ``ELIGIBLE`` which objects can be cleaned/heated/cooled.
"""
from __future__ import annotations

# receptacle type: (openable, min count, max count)
RECEPTACLES: dict[str, dict[str, tuple[bool, int, int]]] = {
    "kitchen": {
        "cabinet": (True, 3, 10), "drawer": (True, 2, 6), "countertop": (False, 1, 3), "diningtable": (False, 0, 1),
        "sinkbasin": (False, 1, 1), "stoveburner": (False, 2, 4), "fridge": (True, 1, 1), "microwave": (True, 1, 1),
        "coffeemachine": (False, 1, 1), "toaster": (False, 1, 1), "garbagecan": (False, 1, 1), "shelf": (False, 0, 3),
    },
    "bathroom": {
        "toilet": (False, 1, 1), "sinkbasin": (False, 1, 2), "bathtubbasin": (False, 0, 1), "cabinet": (True, 2, 4),
        "countertop": (False, 1, 1), "drawer": (True, 0, 4), "shelf": (False, 0, 2), "towelholder": (False, 1, 1),
        "handtowelholder": (False, 0, 1), "toiletpaperhanger": (False, 1, 1), "garbagecan": (False, 1, 1),
    },
    "bedroom": {
        "bed": (False, 1, 1), "desk": (False, 0, 1), "sidetable": (False, 1, 2), "dresser": (False, 0, 1),
        "drawer": (True, 2, 6), "shelf": (False, 0, 4), "garbagecan": (False, 1, 1), "safe": (True, 0, 1),
        "laundryhamper": (False, 0, 1), "armchair": (False, 0, 1),
    },
    "livingroom": {
        "sofa": (False, 1, 1), "armchair": (False, 0, 2), "coffeetable": (False, 1, 1), "sidetable": (False, 1, 2),
        "diningtable": (False, 0, 1), "tvstand": (False, 0, 1), "cabinet": (True, 0, 4), "drawer": (True, 1, 4),
        "shelf": (False, 0, 4), "garbagecan": (False, 1, 1), "dresser": (False, 0, 1),
    },
}
_TABLES = ("countertop", "diningtable")
_PRODUCE = (*_TABLES, "fridge", "garbagecan", "sinkbasin", "microwave")
_DISHES = ("cabinet", *_TABLES, "sinkbasin", "shelf", "microwave", "fridge")
_UTENSILS = ("drawer", *_TABLES, "sinkbasin")
OBJECTS: dict[str, dict[str, tuple[str, ...]]] = {
    "kitchen": {
        "apple": _PRODUCE, "tomato": _PRODUCE, "potato": _PRODUCE, "egg": _PRODUCE,
        "lettuce": (*_TABLES, "fridge", "sinkbasin"), "bread": (*_TABLES, "fridge", "microwave", "cabinet"),
        "mug": (*_DISHES, "coffeemachine"), "cup": _DISHES, "bowl": _DISHES, "plate": _DISHES,
        "pan": ("stoveburner", "countertop", "cabinet", "sinkbasin", "diningtable"),
        "pot": ("stoveburner", "countertop", "cabinet", "sinkbasin", "diningtable", "fridge"),
        "knife": _UTENSILS, "butterknife": _UTENSILS, "fork": _UTENSILS, "spoon": _UTENSILS,
        "spatula": _UTENSILS, "ladle": _UTENSILS,
        "saltshaker": ("cabinet", *_TABLES, "shelf", "drawer"), "peppershaker": ("cabinet", *_TABLES, "shelf", "drawer"),
        "dishsponge": ("sinkbasin", "countertop", "cabinet", "drawer"), "soapbottle": ("countertop", "cabinet", "sinkbasin", "shelf"),
        "winebottle": (*_TABLES, "fridge", "cabinet", "shelf"), "kettle": ("stoveburner", "countertop", "cabinet"),
    },
    "bathroom": {
        "soapbar": ("toilet", "sinkbasin", "bathtubbasin", "countertop", "cabinet", "garbagecan"),
        "soapbottle": ("toilet", "countertop", "cabinet", "shelf", "garbagecan"),
        "spraybottle": ("toilet", "countertop", "cabinet", "shelf", "garbagecan"),
        "cloth": ("countertop", "cabinet", "bathtubbasin", "sinkbasin", "drawer", "toilet"),
        "toiletpaper": ("toiletpaperhanger", "toilet", "cabinet", "countertop", "drawer", "shelf", "garbagecan"),
        "candle": ("countertop", "cabinet", "toilet", "shelf", "drawer"), "towel": ("towelholder",),
        "handtowel": ("handtowelholder", "countertop"), "tissuebox": ("countertop", "toilet", "shelf"),
        "dishsponge": ("sinkbasin", "cabinet", "countertop"), "scrubbrush": ("toilet", "cabinet"),
    },
    "bedroom": {
        "book": ("bed", "desk", "sidetable", "shelf", "dresser", "drawer"),
        "cellphone": ("bed", "desk", "sidetable", "dresser", "drawer", "shelf"),
        "pen": ("desk", "sidetable", "drawer", "shelf", "dresser"), "pencil": ("desk", "sidetable", "drawer", "shelf", "dresser"),
        "keychain": ("desk", "sidetable", "dresser", "drawer", "shelf", "safe"),
        "creditcard": ("desk", "sidetable", "dresser", "drawer", "shelf"),
        "alarmclock": ("desk", "sidetable", "dresser", "shelf"), "cd": ("desk", "sidetable", "drawer", "shelf", "safe", "garbagecan"),
        "laptop": ("bed", "desk", "sidetable", "dresser"), "pillow": ("bed", "armchair"),
        "mug": ("desk", "sidetable", "shelf", "dresser"), "bowl": ("desk", "sidetable", "shelf", "dresser"),
    },
    "livingroom": {
        "remotecontrol": ("sofa", "armchair", "coffeetable", "sidetable", "tvstand", "dresser", "drawer"),
        "keychain": ("sofa", "coffeetable", "sidetable", "drawer", "dresser", "cabinet"),
        "creditcard": ("sofa", "armchair", "coffeetable", "sidetable", "drawer", "dresser"),
        "newspaper": ("sofa", "armchair", "coffeetable", "sidetable", "diningtable"), "pillow": ("sofa", "armchair"),
        "box": ("coffeetable", "sidetable", "diningtable", "dresser", "cabinet", "shelf"),
        "vase": ("shelf", "coffeetable", "sidetable", "diningtable", "tvstand", "cabinet"),
        "statue": ("shelf", "coffeetable", "sidetable", "diningtable", "dresser", "cabinet"),
        "watch": ("coffeetable", "sidetable", "drawer", "dresser", "shelf"),
        "laptop": ("sofa", "coffeetable", "diningtable", "sidetable"), "book": ("coffeetable", "sidetable", "shelf", "sofa"),
    },
}
LAMP_SPOTS = ("desk", "sidetable", "dresser")
# AI2-THOR's floor lamps stand on the floor beside a seat or a side table; ALFWorld lists a lamp
# among what is seen at that receptacle and never offers to take it (``agents/utils/misc.py``),
# and the PDDL lets it be used only ``inReceptacle`` of a receptacle at the agent's location
# (``ToggleObject``), so a floor lamp is placed in one of these, not pickupable, like a desk lamp
FLOOR_LAMP_SPOTS = ("sidetable", "armchair", "sofa")
LAMPS = ("desklamp", "floorlamp")
SPOTS_OF_LAMP = {"desklamp": LAMP_SPOTS, "floorlamp": FLOOR_LAMP_SPOTS}
# ALFWorld's layouts (``gen/layouts/FloorPlan*-objects.json``): every living room (FloorPlan2xx)
# has a FloorLamp, these seven a DeskLamp too; no bedroom, kitchen or bathroom has a FloorLamp
LIVINGROOM_DESKLAMP_PLANS = frozenset({205, 210, 215, 216, 218, 224, 225})
# receptacles that stand at one location (``gen/layouts/FloorPlan*-openable.json``: the same
# point, rotation and horizon), as groups of types with how many of the 30 floor plans of the
# room kind hold such a group (groups of up to three, of the types these rooms hold); and how
# many of the 30 hold any group at all
SHARED_GROUPS: dict[str, tuple[tuple[tuple[str, ...], int], ...]] = {
    "kitchen": ((("cabinet", "cabinet"), 23), (("drawer", "drawer"), 11), (("cabinet", "drawer"), 5),
                (("drawer", "drawer", "drawer"), 2), (("diningtable", "microwave"), 1), (("drawer", "sinkbasin"), 1),
                (("microwave", "sinkbasin"), 1)),
    "bathroom": ((("drawer", "drawer"), 9), (("cabinet", "cabinet"), 8), (("drawer", "drawer", "drawer"), 1),
                 (("shelf", "shelf"), 1), (("shelf", "shelf", "shelf"), 1), (("cabinet", "garbagecan"), 1),
                 (("countertop", "toilet"), 1)),
    "bedroom": ((("drawer", "drawer"), 17), (("shelf", "shelf"), 8), (("drawer", "drawer", "drawer"), 3),
                (("shelf", "shelf", "shelf"), 1), (("drawer", "sidetable"), 1), (("desk", "shelf"), 1)),
    "livingroom": ((("drawer", "drawer"), 7), (("shelf", "shelf"), 7), (("drawer", "drawer", "drawer"), 4),
                   (("shelf", "shelf", "shelf"), 2), (("shelf", "tvstand"), 2), (("drawer", "sidetable"), 2),
                   (("drawer", "dresser"), 2), (("cabinet", "cabinet"), 2), (("diningtable", "diningtable"), 1),
                   (("drawer", "shelf"), 1)),
}
SHARED_PLANS = {"kitchen": 18, "bathroom": 15, "bedroom": 18, "livingroom": 16}
# what each task type may target, per room (clean/heat/cool need the appliance's room)
TRANSFORMABLE = {
    "clean": ("apple", "tomato", "potato", "lettuce", "egg", "mug", "cup", "bowl", "plate", "pan", "pot", "knife",
              "butterknife", "fork", "spoon", "spatula", "ladle", "soapbar", "cloth", "dishsponge"),
    "heat": ("apple", "tomato", "potato", "egg", "bread", "mug", "cup", "plate", "bowl"),
    "cool": ("apple", "tomato", "potato", "lettuce", "bread", "egg", "mug", "cup", "pan", "pot", "bowl", "plate", "winebottle"),
}
LOOKABLE = ("book", "cellphone", "pen", "pencil", "keychain", "creditcard", "alarmclock", "cd", "mug", "bowl",
            "remotecontrol", "watch", "statue", "vase", "box", "newspaper", "pillow", "laptop")
SIMILAR_OBJECT = {
    "apple": "tomato", "tomato": "apple", "potato": "apple", "egg": "potato", "lettuce": "tomato", "bread": "potato",
    "mug": "cup", "cup": "mug", "bowl": "plate", "plate": "bowl", "pan": "pot", "pot": "pan", "kettle": "pot",
    "knife": "butterknife", "butterknife": "knife", "fork": "spoon", "spoon": "fork", "spatula": "ladle",
    "ladle": "spatula", "saltshaker": "peppershaker", "peppershaker": "saltshaker", "dishsponge": "cloth",
    "soapbottle": "soapbar", "soapbar": "soapbottle", "spraybottle": "soapbottle", "winebottle": "soapbottle",
    "cloth": "handtowel", "towel": "handtowel", "handtowel": "towel", "toiletpaper": "tissuebox",
    "tissuebox": "toiletpaper", "candle": "soapbottle", "scrubbrush": "cloth",
    "pen": "pencil", "pencil": "pen", "keychain": "creditcard", "creditcard": "keychain", "cellphone": "remotecontrol",
    "remotecontrol": "cellphone", "book": "newspaper", "newspaper": "book", "vase": "statue", "statue": "vase",
    "box": "book", "watch": "alarmclock", "alarmclock": "watch", "cd": "creditcard", "laptop": "book", "pillow": "box",
}
SIMILAR_RECEPTACLE = {
    "countertop": ("diningtable", "shelf"), "diningtable": ("countertop", "sidetable"), "cabinet": ("drawer", "shelf"),
    "drawer": ("cabinet", "shelf"), "shelf": ("cabinet", "sidetable", "countertop"), "fridge": ("cabinet", "microwave"),
    "microwave": ("cabinet", "fridge"), "garbagecan": ("countertop", "cabinet"), "sinkbasin": ("bathtubbasin", "countertop"),
    "bathtubbasin": ("sinkbasin",), "toilet": ("countertop", "garbagecan"), "sidetable": ("desk", "dresser", "coffeetable"),
    "desk": ("sidetable", "dresser"), "dresser": ("sidetable", "desk"), "coffeetable": ("sidetable", "diningtable"),
    "sofa": ("armchair",), "armchair": ("sofa",), "bed": ("sofa", "armchair"), "safe": ("drawer",),
    "tvstand": ("sidetable", "coffeetable"), "coffeemachine": ("countertop",), "stoveburner": ("countertop",),
}
# what each receptacle type accepts (PDDL ``canContain``): ALFWorld's receptacle/object table
# (``VAL_RECEPTACLE_OBJECTS``, SideTable/CoffeeTable/DiningTable as TableTop) restricted to the
# types these rooms hold; ``put``/``move`` onto anything else is not admissible.
ACCEPTS: dict[str, frozenset[str]] = {k: frozenset(v.split()) for k, v in {
    "armchair": "book box cellphone cloth creditcard keychain laptop newspaper pillow remotecontrol",
    "bathtubbasin": "cloth dishsponge handtowel soapbar",
    "bed": "book cellphone laptop newspaper pillow",
    "cabinet": "book bowl box candle cd cloth cup dishsponge handtowel kettle ladle mug newspaper pan peppershaker plate pot saltshaker soapbar soapbottle spraybottle tissuebox toiletpaper vase winebottle",
    "coffeemachine": "mug",
    "coffeetable": "alarmclock apple book bowl box bread butterknife candle cd cellphone cloth creditcard cup dishsponge egg fork handtowel kettle keychain knife ladle laptop lettuce mug newspaper pan pen pencil peppershaker plate pot potato remotecontrol saltshaker soapbar soapbottle spatula spoon spraybottle statue tissuebox toiletpaper tomato vase watch winebottle",
    "countertop": "alarmclock apple book bowl box bread butterknife candle cd cellphone cloth creditcard cup dishsponge egg fork handtowel kettle keychain knife ladle laptop lettuce mug newspaper pan pen pencil peppershaker plate pot potato remotecontrol saltshaker soapbar soapbottle spatula spoon spraybottle statue tissuebox toiletpaper tomato vase watch winebottle",
    "desk": "alarmclock book bowl box candle cd cellphone cloth creditcard cup keychain laptop mug newspaper pen pencil plate remotecontrol soapbottle spraybottle statue tissuebox toiletpaper vase watch winebottle",
    "diningtable": "alarmclock apple book bowl box bread butterknife candle cd cellphone cloth creditcard cup dishsponge egg fork handtowel kettle keychain knife ladle laptop lettuce mug newspaper pan pen pencil peppershaker plate pot potato remotecontrol saltshaker soapbar soapbottle spatula spoon spraybottle statue tissuebox toiletpaper tomato vase watch winebottle",
    "drawer": "book butterknife candle cd cellphone cloth creditcard dishsponge fork handtowel keychain knife ladle newspaper pen pencil peppershaker remotecontrol saltshaker soapbar soapbottle spatula spoon spraybottle tissuebox toiletpaper watch",
    "dresser": "alarmclock book bowl box candle cd cellphone cloth creditcard cup keychain laptop mug newspaper pen pencil plate remotecontrol spraybottle statue tissuebox toiletpaper vase watch winebottle",
    "fridge": "apple bowl bread cup egg lettuce mug pan plate pot potato tomato winebottle",
    "garbagecan": "apple bread cd cloth dishsponge egg handtowel lettuce newspaper pen pencil potato soapbar soapbottle spraybottle tissuebox toiletpaper tomato winebottle",
    "handtowelholder": "handtowel",
    "laundryhamper": "cloth",
    "microwave": "apple bowl bread cup egg mug plate potato tomato",
    "safe": "cd cellphone creditcard keychain statue vase watch",
    "shelf": "alarmclock book bowl box candle cd cellphone cloth creditcard cup dishsponge handtowel kettle keychain mug newspaper pen pencil peppershaker plate pot remotecontrol saltshaker soapbar soapbottle spraybottle statue tissuebox toiletpaper vase watch winebottle",
    "sidetable": "alarmclock apple book bowl box bread butterknife candle cd cellphone cloth creditcard cup dishsponge egg fork handtowel kettle keychain knife ladle laptop lettuce mug newspaper pan pen pencil peppershaker plate pot potato remotecontrol saltshaker soapbar soapbottle spatula spoon spraybottle statue tissuebox toiletpaper tomato vase watch winebottle",
    "sinkbasin": "apple bowl butterknife cloth cup dishsponge egg fork handtowel kettle knife ladle lettuce mug pan plate pot potato soapbar spatula spoon tomato",
    "sofa": "book box cellphone cloth creditcard keychain laptop newspaper pillow remotecontrol",
    "stoveburner": "kettle pan pot",
    "toaster": "",
    "toilet": "candle cloth dishsponge handtowel newspaper soapbar soapbottle spraybottle tissuebox toiletpaper",
    "toiletpaperhanger": "toiletpaper",
    "towelholder": "towel",
    "tvstand": "tissuebox",
}.items()}
# object properties the original PDDL problems state (``VAL_ACTION_OBJECTS``): clean/heat/cool
# are admissible only for these (and only they can be the target of such a task)
CLEANABLE = frozenset("apple bowl butterknife cloth cup dishsponge egg fork kettle knife ladle lettuce mug pan plate "
                      "pot potato soapbar spatula spoon tomato".split())
HEATABLE = frozenset("apple bread cup egg mug plate potato tomato".split())
COOLABLE = frozenset("apple bowl bread cup egg lettuce mug pan plate pot potato tomato winebottle".split())
ELIGIBLE = {"clean": CLEANABLE, "heat": HEATABLE, "cool": COOLABLE}
# where each room kind's floor plans start (AI2-THOR numbering) and which are held out
PLAN_BASE = {"kitchen": 0, "livingroom": 200, "bedroom": 300, "bathroom": 400}
SEEN_PLANS = range(1, 26)    # FloorPlan{base+1..base+25}: train / valid_seen
UNSEEN_PLANS = range(26, 31)  # FloorPlan{base+26..base+30}: valid_unseen / test

# AI2-THOR class names of the types (the original PDDL ids: they fix the engine's listing order)
THOR_NAME = {
    "alarmclock": "AlarmClock", "apple": "Apple", "armchair": "ArmChair", "bathtubbasin": "BathtubBasin", "bed": "Bed",
    "book": "Book", "bowl": "Bowl", "box": "Box", "bread": "Bread", "butterknife": "ButterKnife", "cabinet": "Cabinet",
    "candle": "Candle", "cd": "CD", "cellphone": "CellPhone", "cloth": "Cloth", "coffeemachine": "CoffeeMachine",
    "coffeetable": "CoffeeTable", "countertop": "CounterTop", "creditcard": "CreditCard", "cup": "Cup", "desk": "Desk",
    "desklamp": "DeskLamp", "diningtable": "DiningTable", "dishsponge": "DishSponge", "drawer": "Drawer",
    "dresser": "Dresser", "egg": "Egg", "floorlamp": "FloorLamp", "fork": "Fork", "fridge": "Fridge",
    "garbagecan": "GarbageCan", "handtowel": "HandTowel", "handtowelholder": "HandTowelHolder", "kettle": "Kettle",
    "keychain": "KeyChain", "knife": "Knife", "ladle": "Ladle", "laptop": "Laptop", "laundryhamper": "LaundryHamper",
    "lettuce": "Lettuce", "microwave": "Microwave", "mug": "Mug", "newspaper": "Newspaper", "pan": "Pan", "pen": "Pen",
    "pencil": "Pencil", "peppershaker": "PepperShaker", "pillow": "Pillow", "plate": "Plate", "pot": "Pot",
    "potato": "Potato", "remotecontrol": "RemoteControl", "safe": "Safe", "saltshaker": "SaltShaker",
    "scrubbrush": "ScrubBrush", "shelf": "Shelf", "sidetable": "SideTable", "sinkbasin": "SinkBasin",
    "soapbar": "SoapBar", "soapbottle": "SoapBottle", "sofa": "Sofa", "spatula": "Spatula", "spoon": "Spoon",
    "spraybottle": "SprayBottle", "statue": "Statue", "stoveburner": "StoveBurner", "tissuebox": "TissueBox",
    "toaster": "Toaster", "toilet": "Toilet", "toiletpaper": "ToiletPaper", "toiletpaperhanger": "ToiletPaperHanger",
    "tomato": "Tomato", "towel": "Towel", "towelholder": "TowelHolder", "tvstand": "TVStand", "vase": "Vase",
    "watch": "Watch", "winebottle": "WineBottle",
}
BASINS = {"sinkbasin": "Sink", "bathtubbasin": "Bathtub"}  # AI2-THOR: Sink|x|y|z|SinkBasin


def can_contain(recep_type: str, obj_type: str) -> bool:
    return obj_type in ACCEPTS.get(recep_type, ())
